// The floor under benchmark 7: what one call answered by a supervisor through seccomp user notification costs
// on this machine, with nothing of cordon in it. A thread of this process creates files with
// open(O_CREAT|O_EXCL) + close in a directory (give one on tmpfs), first answered by the kernel, then under a
// filter that sends every openat to a supervisor thread, which answers:
//   send      with SECCOMP_IOCTL_NOTIF_SEND and SECCOMP_USER_NOTIF_FLAG_CONTINUE (no descriptor to hand over:
//             the cheapest answer there is; unsafe for a decision on a path, shown as the bound),
//   addfd     performing the openat itself and handing the descriptor over with SECCOMP_IOCTL_NOTIF_ADDFD
//             (SECCOMP_ADDFD_FLAG_SEND), as cordon does,
//   addfd-pin the same with the caller kept on the supervisor's CPU while it installs the descriptor (ADDFD
//             wakes the caller with an ordinary wake-up, which on an idle machine sends it to another,
//             sleeping CPU): tried for cordon and left out, faster on an idle machine, slower on a busy one.
// Synchronous wake-ups (Linux 6.6) are asked for; an older kernel uses ordinary ones. Prints one line per
// mode: microseconds per file (median of ROUNDS rounds).
//
//   notify_bench DIR [FILES [ROUNDS]]
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "jail/seccomp_notify_compat.hpp"

namespace {

enum class Mode { Kernel, Send, AddFd, AddFdPinned };

const char* name(Mode m) {
    switch (m) {
        case Mode::Kernel:
            return "kernel";
        case Mode::Send:
            return "send";
        case Mode::AddFd:
            return "addfd";
        case Mode::AddFdPinned:
            return "addfd-pin";
    }
    return "?";
}

std::atomic<int> g_mode{0};
std::atomic<int> g_listener{-1};

// The supervisor: waits for the listener, then answers every notification as g_mode says until the process
// ends. Started before the filter exists (a thread inherits its creator's filter).
void supervise() {
    int listener = -1;
    while ((listener = g_listener.load()) < 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (;;) {
        seccomp_notif req{};
        if (::ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
            if (errno == EINTR || errno == ENOENT) continue;
            return;
        }
        const Mode mode = static_cast<Mode>(g_mode.load());
        if (mode == Mode::Send || mode == Mode::Kernel) {
            seccomp_notif_resp resp{};
            resp.id = req.id;
            resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
            ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
            continue;
        }
        // The caller's path, as cordon reads it (the caller is a thread of this process: its memory is ours).
        const char* path = reinterpret_cast<const char*>(static_cast<std::uintptr_t>(req.data.args[1]));
        const int fd =
            ::openat(static_cast<int>(req.data.args[0]), path, static_cast<int>(req.data.args[2]) | O_CLOEXEC,
                     static_cast<mode_t>(req.data.args[3]));
        if (fd < 0) {
            seccomp_notif_resp resp{};
            resp.id = req.id;
            resp.error = -errno;
            ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
            continue;
        }
        cpu_set_t own, here;
        bool pinned = false;
        const pid_t caller = static_cast<pid_t>(req.pid);
        if (mode == Mode::AddFdPinned && ::sched_getaffinity(caller, sizeof own, &own) == 0) {
            CPU_ZERO(&here);
            CPU_SET(::sched_getcpu(), &here);
            pinned = ::sched_setaffinity(caller, sizeof here, &here) == 0;
        }
        seccomp_notif_addfd add{};
        add.id = req.id;
        add.flags = SECCOMP_ADDFD_FLAG_SEND;
        add.srcfd = static_cast<std::uint32_t>(fd);
        ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
        if (pinned) ::sched_setaffinity(caller, sizeof own, &own);
        ::close(fd);
    }
}

// Creates `files` files in `dir` and removes them: microseconds per creation.
double create_files(const std::string& dir, int files) {
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(files));
    for (int i = 0; i < files; ++i)
        names.push_back(dir + "/f" + std::to_string(i));
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& n : names) {
        const int fd = ::open(n.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) {
            std::perror(n.c_str());
            std::exit(1);
        }
        ::close(fd);
    }
    const auto end = std::chrono::steady_clock::now();
    for (const std::string& n : names)
        ::unlink(n.c_str());
    return std::chrono::duration<double, std::micro>(end - start).count() / files;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: notify_bench DIR [FILES [ROUNDS]]\n");
        return 2;
    }
    const std::string dir = std::string(argv[1]) + "/notify-bench-" + std::to_string(::getpid());
    const int files = argc > 2 ? std::atoi(argv[2]) : 20000;
    const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
    if (files <= 0 || rounds <= 0 || ::mkdir(dir.c_str(), 0700) != 0) {
        std::fprintf(stderr, "notify_bench: bad arguments or cannot create %s\n", dir.c_str());
        return 2;
    }
    // Every openat of the measuring thread goes to the supervisor once its filter is on (the filter is the
    // measuring thread's alone: the supervisor's own openat is not filtered).
    std::vector<double> results[4];
    std::thread(supervise).detach();
    std::thread measure([&] {
        sock_filter filter[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
        for (int r = 0; r < rounds; ++r)
            results[0].push_back(create_files(dir, files));
        ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        const int listener = static_cast<int>(
            ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog));
        if (listener < 0) {
            std::perror("seccomp");
            std::exit(1);
        }
        ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
        g_listener.store(listener);
        for (int r = 0; r < rounds; ++r)
            for (int m = 1; m < 4; ++m) {
                g_mode.store(m);
                results[m].push_back(create_files(dir, files));
            }
    });
    measure.join();
    ::rmdir(dir.c_str());
    for (int m = 0; m < 4; ++m) {
        std::sort(results[m].begin(), results[m].end());
        std::printf("%-10s %.2f us per file (median of %d rounds of %d)\n", name(static_cast<Mode>(m)),
                    results[m][results[m].size() / 2], rounds, files);
    }
    return 0;
}
