// What Linux 6.6 added to seccomp user notification, for older kernel headers (the kernel refuses it with
// EINVAL when it lacks it: the callers treat it as a speed-up only).
#pragma once

#include <linux/seccomp.h>

// The notifying thread hands its CPU to the supervisor and back (a synchronous wake-up on the current CPU
// instead of a wake-up of the other thread wherever it last ran).
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
