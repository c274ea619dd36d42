// --memory and --pids where no cgroup holds them (jail/cgroup.cpp decides): rlimits, set by the command on
// itself. RLIMIT_AS per process for memory, RLIMIT_NPROC for processes (counted per user; the kernel does not
// apply it to the host's root user, for whom the supervisor refuses this fallback).
#include <sys/resource.h>

#include "jail/detail/setup.hpp"

namespace cordon::jail::detail {

Result apply_limits(Context& ctx) {
    if (ctx.rlimit_as) {
        rlimit rl{*ctx.rlimit_as, *ctx.rlimit_as};
        if (::setrlimit(RLIMIT_AS, &rl) != 0) return fail("set RLIMIT_AS");
    }
    if (ctx.rlimit_nproc) {
        rlimit rl{*ctx.rlimit_nproc, *ctx.rlimit_nproc};
        if (::setrlimit(RLIMIT_NPROC, &rl) != 0) return fail("set RLIMIT_NPROC");
    }
    return std::nullopt;
}

}  // namespace cordon::jail::detail
