// Landlock's kernel ABI as cordon uses it, for the namespace jail's write rules (landlock.cpp) and the jail
// without namespaces (landlock_jail.cpp). The build machine's kernel headers may predate the newer ABIs; the
// values are stable.
#pragma once

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

namespace cordon::jail::detail::landlock {

inline constexpr std::uint64_t kExecute = 1ULL << 0, kWriteFile = 1ULL << 1, kReadFile = 1ULL << 2,
                               kReadDir = 1ULL << 3, kRemoveDir = 1ULL << 4, kRemoveFile = 1ULL << 5,
                               kMakeChar = 1ULL << 6, kMakeDir = 1ULL << 7, kMakeReg = 1ULL << 8,
                               kMakeSock = 1ULL << 9, kMakeFifo = 1ULL << 10, kMakeBlock = 1ULL << 11,
                               kMakeSym = 1ULL << 12,
                               kRefer = 1ULL << 13,                                       // ABI 2
    kTruncate = 1ULL << 14,                                                               // ABI 3
    kIoctlDev = 1ULL << 15;                                                               // ABI 5
inline constexpr std::uint64_t kNetBindTcp = 1ULL << 0, kNetConnectTcp = 1ULL << 1;       // ABI 4
inline constexpr std::uint64_t kScopeAbstractUnix = 1ULL << 0, kScopeSignal = 1ULL << 1;  // ABI 6

struct RulesetAttr {
    std::uint64_t handled_access_fs;
    std::uint64_t handled_access_net;  // ABI 4
    std::uint64_t scoped;              // ABI 6
};

struct PathBeneath {
    std::uint64_t allowed_access;
    std::int32_t parent_fd;
} __attribute__((packed));

inline constexpr int kRulePathBeneath = 1;

// The kernel's Landlock ABI version; 0 when it has none.
inline int abi_version() {
    long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U /* LANDLOCK_CREATE_RULESET_VERSION */);
    return v < 0 ? 0 : static_cast<int>(v);
}

}  // namespace cordon::jail::detail::landlock
