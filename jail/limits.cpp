// --memory and --pids. cgroup v2 would count the whole jail; it is usable only when the unified hierarchy has
// the controllers delegated to us. Otherwise rlimits: RLIMIT_AS per process for memory, RLIMIT_NPROC for
// processes (counted per user; the kernel does not apply it to the host's root user).
#include <sys/resource.h>

#include "jail/detail/setup.hpp"

namespace cordon::jail::detail {

Result apply_limits(Context& ctx) {
    const auto& c = ctx.config;
    if (c.memory_bytes) {
        rlimit rl{*c.memory_bytes, *c.memory_bytes};
        if (::setrlimit(RLIMIT_AS, &rl) != 0) return fail("set RLIMIT_AS");
    }
    if (c.max_pids) {
        rlimit rl{*c.max_pids, *c.max_pids};
        if (::setrlimit(RLIMIT_NPROC, &rl) != 0) return fail("set RLIMIT_NPROC");
    }
    return std::nullopt;
}

}  // namespace cordon::jail::detail
