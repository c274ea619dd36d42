#include "proxy/fd_limit.hpp"

#include <sys/resource.h>

#include <cstdio>

namespace cordon::proxy {

void raise_fd_limit() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
    rlim_t want = 1 << 20;
    if (FILE* f = std::fopen("/proc/sys/fs/nr_open", "r")) {
        unsigned long n = 0;
        if (std::fscanf(f, "%lu", &n) == 1 && n > 0) want = n;
        std::fclose(f);
    }
    // As root the hard limit itself can go up to fs.nr_open.
    rlimit raised{want, want};
    if (lim.rlim_max < want && ::setrlimit(RLIMIT_NOFILE, &raised) == 0) return;
    if (lim.rlim_cur < lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &lim);
    }
}

}  // namespace cordon::proxy
