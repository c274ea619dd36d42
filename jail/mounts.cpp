// Applies a MountPlan inside the jail's new mount namespace.
//
// Layout while building (after the first pivot_root): "/" is a private staging tmpfs, "/oldroot" the host's
// root (the source of writable binds), "/readonly" a copy of it made read-only once, every submount included
// (the source of read-only binds: a bind of a read-only mount is read-only, so each costs one mount call),
// "/newroot" the jail's future root (the target of every mount). A second pivot_root into /newroot and a lazy
// unmount of the staging root leave nothing of the host but what the plan bound.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "jail/detail/setup.hpp"

namespace cordon::jail::detail {

namespace fs = std::filesystem;

namespace {

constexpr const char* kOld = "/oldroot";
constexpr const char* kNew = "/newroot";
constexpr const char* kReadOnly = "/readonly";

std::string in_new(const fs::path& p) {
    return p == "/" ? std::string(kNew) : kNew + p.string();
}
std::string in_old(const fs::path& p) {
    return p == "/" ? std::string(kOld) : kOld + p.string();
}
std::string in_readonly(const fs::path& p) {
    return p == "/" ? std::string(kReadOnly) : kReadOnly + p.string();
}

Result do_mount(const std::string& source, const std::string& target, const char* type, unsigned long flags,
                const char* data, std::source_location where = std::source_location::current()) {
    if (::mount(source.empty() ? nullptr : source.c_str(), target.c_str(), type, flags, data) != 0)
        return fail("mount " + (source.empty() ? std::string(type ? type : "") : source) + " on " + target,
                    where);
    return std::nullopt;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size()) {
            int v = 0;
            bool ok = true;
            for (int k = 1; k <= 3; ++k) {
                char c = s[i + static_cast<std::size_t>(k)];
                if (c < '0' || c > '7') ok = false;
                v = v * 8 + (c - '0');
            }
            if (ok) {
                out.push_back(static_cast<char>(v));
                i += 3;
                continue;
            }
        }
        out.push_back(s[i]);
    }
    return out;
}

// The host's mount points, from Context (read by the jail child before it mounts anything).
const std::vector<std::string>* host_mounts = nullptr;

Result remount_readonly(const std::string& point) {
    struct statvfs sv {};
    if (::statvfs(point.c_str(), &sv) != 0) {
        // Unreachable for us (a directory we may not enter, or a mount point hidden by another mount): the
        // command, with our uid and no capabilities, cannot reach it either.
        if (errno == EACCES || errno == ENOENT || errno == ENOTDIR) return std::nullopt;
        return fail("statvfs " + point);
    }
    unsigned long flags = MS_REMOUNT | MS_BIND | MS_RDONLY;
    if (sv.f_flag & ST_NOSUID) flags |= MS_NOSUID;
    if (sv.f_flag & ST_NODEV) flags |= MS_NODEV;
    if (sv.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
    if (sv.f_flag & ST_NOATIME) flags |= MS_NOATIME;
    if (sv.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
    if (sv.f_flag & ST_RELATIME) flags |= MS_RELATIME;
    if (!(sv.f_flag & (ST_NOATIME | ST_RELATIME))) flags |= MS_STRICTATIME;
    if (::mount(nullptr, point.c_str(), nullptr, flags, nullptr) != 0) {
        if (errno == EACCES || errno == ENOENT) return std::nullopt;
        return fail("remount read-only " + point);
    }
    return std::nullopt;
}

// Why: a bind mount's MS_RDONLY applies to that one mount only. Submounts (a mounted /home, /dev/shm, /run)
// keep their own flags and would stay writable under a read-only "/". So the copy of the host's root and
// every submount in it are made read-only: with one mount_setattr(2) call (Linux 5.12), else by remounting
// each host mount point, keeping the flags it already has (in a user namespace, flags inherited from a more
// privileged namespace (nosuid, nodev, noexec, atime) are locked and a remount that drops them fails).
Result make_readonly_copy() {
    if (auto r = do_mount(kOld, kReadOnly, nullptr, MS_BIND | MS_REC, nullptr)) return r;
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_RDONLY;
    if (::syscall(SYS_mount_setattr, AT_FDCWD, kReadOnly, AT_RECURSIVE, &attr, sizeof attr) == 0)
        return std::nullopt;
    if (errno != ENOSYS) return fail("make the host's root read-only (mount_setattr)");
    if (auto r = remount_readonly(kReadOnly)) return r;
    for (const auto& m : *host_mounts)
        if (m != "/")
            if (auto r = remount_readonly(in_readonly(m))) return r;
    return std::nullopt;
}

Result mkdirs(const std::string& path) {
    std::string cur;
    std::size_t pos = 0;
    while (pos != std::string::npos) {
        pos = path.find('/', pos + 1);
        cur = path.substr(0, pos);
        if (cur.empty()) continue;
        if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return fail("mkdir " + cur);
    }
    return std::nullopt;
}

// The mount point for `target` must exist. Below our own tmpfs mounts (/tmp, masks, /dev) it may not yet:
// create it there. Elsewhere it is the host's own path and exists.
Result ensure_target(const std::string& target, bool directory) {
    struct stat st {};
    if (::lstat(target.c_str(), &st) == 0) return std::nullopt;
    if (directory) return mkdirs(target);
    if (auto r = mkdirs(fs::path(target).parent_path().string())) return r;
    int fd = ::open(target.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return fail("create mount point " + target);
    ::close(fd);
    return std::nullopt;
}

// Whether a path the plan masks has gone from the host since the plan was made (and so from the jail's view
// of it): then there is nothing to hide, and no mount point to make in the read-only root. Why: a glob's
// matches are taken when the run starts (`/etc/shadow*` matched the `/etc/shadow.lock` a concurrent useradd
// held for a moment); the mount point could not be created (or the mount found nothing), and the run failed.
bool gone_from_host(const fs::path& path, const std::string& target) {
    struct stat st {};
    return ::lstat(target.c_str(), &st) != 0 && errno == ENOENT && ::lstat(in_old(path).c_str(), &st) != 0 &&
           errno == ENOENT;
}

bool source_is_dir(const std::string& source) {
    struct stat st {};
    return ::stat(source.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Binds the host's `path` over the jail's, with its submounts: writable as the host has it, or from the
// read-only copy.
Result bind(const fs::path& path, bool writable) {
    std::string source = writable ? in_old(path) : in_readonly(path), target = in_new(path);
    if (auto r = ensure_target(target, source_is_dir(source))) return r;
    return do_mount(source, target, nullptr, MS_BIND | MS_REC, nullptr);
}

Result mount_proc() {
    std::string proc = in_new("/proc");
    if (auto r = ensure_target(proc, true)) return r;
    // A fresh proc of the jail's PID namespace: it shows only the jail's processes.
    if (auto r = do_mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr)) return r;
    // Why: proc's kernel knobs are checked against file permissions and the caller's uid, not only
    // capabilities. A command running as (mapped) root could write host sysctls through /proc/sys. Bind those
    // parts read-only over themselves.
    for (const char* part : {"sys", "sysrq-trigger", "irq", "bus"}) {
        std::string p = proc + "/" + part;
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0) continue;
        if (auto r = do_mount(p, p, nullptr, MS_BIND | MS_REC, nullptr)) return r;
        if (auto r = remount_readonly(p)) return r;
    }
    return std::nullopt;
}

Result mount_dev() {
    std::string dev = in_new("/dev");
    if (auto r = ensure_target(dev, true)) return r;
    if (auto r = do_mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")) return r;
    // Device nodes are bound from the host's /dev: a tmpfs created in a user namespace is always nodev, the
    // bind keeps the host mount's permission to open devices.
    for (const char* node : {"null", "zero", "full", "random", "urandom", "tty"}) {
        std::string source = std::string(kOld) + "/dev/" + node, target = dev + "/" + node;
        struct stat st {};
        if (::stat(source.c_str(), &st) != 0) continue;
        if (auto r = ensure_target(target, false)) return r;
        if (auto r = do_mount(source, target, nullptr, MS_BIND, nullptr)) return r;
    }
    // A private devpts instance: the jail's ptys are its own; the terminal it was started on stays reachable
    // through the inherited fds 0-2 and /dev/tty.
    if (auto r = ensure_target(dev + "/pts", true)) return r;
    if (auto r = do_mount("devpts", dev + "/pts", "devpts", MS_NOSUID | MS_NOEXEC,
                          "newinstance,ptmxmode=0666,mode=620"))
        return r;
    if (::symlink("pts/ptmx", (dev + "/ptmx").c_str()) != 0) return fail("symlink /dev/ptmx");
    // The terminal the jail was started on (a host pty, not in the jail's devpts) appears as /dev/console, as
    // container runtimes do: ttyname(3) finds it there, so `tty`, shells and editors see a named terminal.
    for (int fd = 0; fd <= 2; ++fd) {
        if (!::isatty(fd)) continue;
        char link[256] = {};
        std::string self = std::string(kOld) + "/proc/self/fd/" + std::to_string(fd);
        ssize_t n = ::readlink(self.c_str(), link, sizeof link - 1);
        if (n <= 0 || std::strncmp(link, "/dev/", 5) != 0) continue;
        std::string source = std::string(kOld) + link;
        struct stat st {};
        if (::stat(source.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) continue;
        if (auto r = ensure_target(dev + "/console", false)) return r;
        if (auto r = do_mount(source, dev + "/console", nullptr, MS_BIND, nullptr)) return r;
        break;
    }
    if (auto r = ensure_target(dev + "/shm", true)) return r;
    if (auto r = do_mount("tmpfs", dev + "/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")) return r;
    const std::pair<const char*, const char*> links[] = {{"/proc/self/fd", "fd"},
                                                         {"/proc/self/fd/0", "stdin"},
                                                         {"/proc/self/fd/1", "stdout"},
                                                         {"/proc/self/fd/2", "stderr"}};
    for (const auto& [to, name] : links)
        if (::symlink(to, (dev + "/" + name).c_str()) != 0) return fail(std::string("symlink /dev/") + name);
    // The /dev tmpfs itself read-only: nothing can be created in /dev; the binds and shm keep their own
    // flags.
    return do_mount("", dev, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, nullptr);
}

// A read-only file mounted on a symlink itself (MountKind::ReadOnlyLink): mount(2) follows the link, the new
// mount API (Linux 5.2) takes the link's own dentry through an O_PATH|O_NOFOLLOW descriptor.
Result mount_file_on_link(const MountOp& op) {
    std::string source = op.source.empty() ? std::string("/empty-file") : in_readonly(op.source);
    int tree = static_cast<int>(
        ::syscall(SYS_open_tree, AT_FDCWD, source.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (tree < 0) return fail("clone a mount of " + source);
    mount_attr attr{};
    attr.attr_set = MOUNT_ATTR_RDONLY;
    std::string target = in_new(op.path);
    int link = ::open(target.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    Result r;
    if (link < 0)
        r = fail("open " + target);
    else if (::syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0)
        r = fail("make the mount of " + source + " read-only");
    else if (::syscall(SYS_move_mount, tree, "", link, "",
                       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
        r = fail("mount on the symlink " + target);
    if (link >= 0) ::close(link);
    ::close(tree);
    return r;
}

// A kernel without the new mount API (open_tree and move_mount: 5.2, mount_setattr: 5.12) cannot protect the
// link itself; its target stays protected. Without it the run stops, unless --best-effort.
Result mount_on_link(const MountOp& op, bool best_effort) {
    Result r = mount_file_on_link(op);
    if (!r || r->err != ENOSYS) return r;
    if (!best_effort) {
        r->what += "; this kernel cannot protect a symlink itself, --best-effort runs without that";
        return r;
    }
    say("warning: --best-effort: the symlink " + op.path.string() +
        " itself is not protected (this kernel lacks the new mount API); its target is");
    return std::nullopt;
}

Result apply_op(const MountOp& op, std::vector<std::string>& masks, bool best_effort) {
    switch (op.kind) {
        case MountKind::RootReadOnly:
            return do_mount(kReadOnly, kNew, nullptr, MS_BIND | MS_REC, nullptr);
        case MountKind::PrivateTmp: {
            std::string target = in_new(op.path);
            if (auto r = ensure_target(target, true)) return r;
            return do_mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
        }
        case MountKind::Writable:
            // Recursive, so submounts below a writable root stay as the host has them.
            return bind(op.path, true);
        case MountKind::ReadOnly:
            return bind(op.path, false);
        case MountKind::MaskDir:
        case MountKind::MaskFile: {
            std::string target = in_new(op.path);
            const bool dir = op.kind == MountKind::MaskDir;
            auto mask = [&]() -> Result {
                if (auto r = ensure_target(target, dir)) return r;
                // A directory's mask stays writable while deeper mounts (allowRead inside) get their mount
                // points; read-only at the end.
                if (dir)
                    return do_mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                    "mode=0755,size=16k");
                if (auto r = do_mount("/empty-file", target, nullptr, MS_BIND, nullptr)) return r;
                return do_mount("", target, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                                nullptr);
            };
            // A path that comes and goes while the mask is made (a lock file) is tried again, a few times.
            for (int attempt = 0;; ++attempt) {
                if (gone_from_host(op.path, target)) return std::nullopt;  // nothing to hide
                Result r = mask();
                if (!r) break;
                if (attempt == 4) return r;
            }
            if (dir) masks.push_back(target);
            return std::nullopt;
        }
        case MountKind::Proc:
            return mount_proc();
        case MountKind::Dev:
            return mount_dev();
        case MountKind::ReadOnlyLink:
            return mount_on_link(op, best_effort);
        case MountKind::Symlink: {
            // Inside a mask's tmpfs, still writable here (made read-only with the mask at the end).
            std::string target = in_new(op.path);
            if (::symlink(op.source.c_str(), target.c_str()) != 0 && errno != EEXIST)
                return fail("symlink " + target + " -> " + op.source.string());
            return std::nullopt;
        }
    }
    return fail_msg("unknown mount kind");
}

}  // namespace

std::vector<std::string> read_mount_points() {
    // Read with plain read(2) by the jail child before it changes anything: its mount namespace starts as a
    // copy of the caller's.
    std::string text;
    int fd = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    char buf[16384];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        if (n > 0) text.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    std::vector<std::string> points;
    std::set<std::string> seen;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        // id parent major:minor root mount-point ...
        std::size_t field = pos;
        for (int i = 0; i < 4 && field < eol; ++i) {
            field = text.find(' ', field);
            field = field == std::string::npos || field > eol ? eol : field + 1;
        }
        std::size_t end = text.find(' ', field);
        if (end == std::string::npos || end > eol) end = eol;
        if (field < end) {
            std::string point = unescape(text.substr(field, end - field));
            if (!point.empty() && point[0] == '/' && seen.insert(point).second) points.push_back(point);
        }
        pos = eol + 1;
    }
    return points;
}

Result enter_staging_root(Context&) {
    // Nothing we mount may propagate back to the host, and pivot_root refuses shared mounts.
    if (auto r = do_mount("", "/", nullptr, MS_REC | MS_PRIVATE, nullptr)) return r;
    // The staging root. /tmp exists on every system we run on; the host's /tmp stays reachable below /oldroot
    // once the staging tmpfs has been pivoted away from it.
    if (auto r = do_mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700,size=64k")) return r;
    if (::mkdir("/tmp/oldroot", 0755) != 0) return fail("mkdir staging oldroot");
    if (::mkdir("/tmp/newroot", 0755) != 0) return fail("mkdir staging newroot");
    if (::mkdir("/tmp/readonly", 0755) != 0) return fail("mkdir staging readonly");
    if (::syscall(SYS_pivot_root, "/tmp", "/tmp/oldroot") != 0)
        return fail("pivot_root into the staging root");
    if (::chdir("/") != 0) return fail("chdir /");
    int fd = ::open("/empty-file", O_CREAT | O_WRONLY | O_CLOEXEC, 0444);
    if (fd < 0) return fail("create /empty-file");
    ::close(fd);
    return std::nullopt;
}

Result apply_mount_plan(Context& ctx) {
    if (ctx.host_mounts.empty()) return fail_msg("cannot read the host's mount table");
    host_mounts = &ctx.host_mounts;
    if (auto r = make_readonly_copy()) return r;
    // Placeholders are bound last: the supervisor creates them while the rest is mounted. Nothing is mounted
    // below a placeholder (nothing exists there) and every op covering one is shallower, so the order does
    // not change the result.
    std::set<fs::path> placeholders;
    for (const auto& ph : ctx.plan.placeholders)
        placeholders.insert(ph.path);
    std::vector<const MountOp*> deferred;
    std::vector<std::string> masks;
    auto apply = [&](const MountOp& op) -> Result {
        if (auto r = apply_op(op, masks, ctx.config.best_effort)) {
            r->what +=
                " (" + std::string(to_string(op.kind)) + " " + op.path.string() + " for " + op.why + ")";
            return r;
        }
        return std::nullopt;
    };
    for (const auto& op : ctx.plan.ops) {
        if (op.kind == MountKind::ReadOnly && placeholders.count(op.path)) {
            deferred.push_back(&op);
            continue;
        }
        if (auto r = apply(op)) return r;
    }
    if (!placeholders.empty()) {
        std::vector<fs::path> not_made;
        if (!receive_placeholders_made(ctx.supervisor_fd, not_made))
            return fail_msg("the supervisor did not create the placeholders");
        for (const MountOp* op : deferred)
            if (std::find(not_made.begin(), not_made.end(), op->path) == not_made.end())
                if (auto r = apply(*op)) return r;
    }
    for (const auto& mask : masks)
        if (auto r = do_mount("", mask, nullptr,
                              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr))
            return r;

    if (auto r = bind_resolv_conf(ctx)) return r;

    // Into the jail's root; the staging root (with the host's root below it) is stacked on top by
    // pivot_root(".", ".") and detached, so no path leads back to the host's tree.
    if (::chdir(kNew) != 0) return fail("chdir /newroot");
    if (::syscall(SYS_pivot_root, ".", ".") != 0) return fail("pivot_root into the jail's root");
    if (::umount2(".", MNT_DETACH) != 0) return fail("detach the host's root");
    if (::chdir("/") != 0) return fail("chdir /");
    if (::chdir(ctx.config.cwd.c_str()) != 0) return fail("chdir " + ctx.config.cwd.string());
    return std::nullopt;
}

}  // namespace cordon::jail::detail
