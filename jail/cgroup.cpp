// The jail's cgroup: created by the supervisor before the clone, the jail's init moved into it right after
// (before it starts the command, so every process of the jail is counted), removed when the jail is gone.
#include "jail/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "jail/detail/step.hpp"

namespace cordon::jail {

namespace fs = std::filesystem;

namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(sep, start);
        if (end == std::string_view::npos) end = text.size();
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// Mount points in mountinfo escape space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
            s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            out.push_back(static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
            i += 3;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

// Our cgroup `path` (from /proc/self/cgroup) inside a mount of its hierarchy whose root is `root`.
fs::path inside_mount(const std::string& mount_point, const std::string& root, const std::string& path) {
    if (path == root || (root == "/" && fs::path(path).relative_path().empty())) return mount_point;
    if (root == "/") return fs::path(mount_point) / fs::path(path).relative_path();
    if (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/')
        return fs::path(mount_point) / path.substr(root.size() + 1);
    return {};  // our cgroup is not below this mount
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool has_word(std::string_view text, std::string_view word) {
    for (auto line : split(text, '\n'))
        for (auto w : split(line, ' '))
            if (w == word) return true;
    return false;
}

std::string errno_text(const fs::path& path) {
    return path.string() + ": " + std::strerror(errno);
}

// Writes `text` to an existing control file. A message on failure.
std::optional<std::string> write_control(const fs::path& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno_text(path);
    ssize_t n = ::write(fd, text.data(), text.size());
    std::optional<std::string> error;
    if (n != static_cast<ssize_t>(text.size())) error = errno_text(path);
    ::close(fd);
    return error;
}

// Why: a supervisor killed with SIGKILL leaves its (empty) cgroup behind; the next run removes every
// `cordon-PID-*` whose PID no longer exists. One that still holds processes cannot be removed (EBUSY) and
// stays; a live supervisor's is never touched.
void remove_stale(const fs::path& parent) {
    DIR* dir = ::opendir(parent.c_str());
    if (!dir) return;
    while (dirent* e = ::readdir(dir)) {
        std::string_view name = e->d_name;
        if (name.substr(0, 7) != "cordon-") continue;
        std::size_t end = name.find('-', 7);
        if (end == std::string_view::npos || end == 7) continue;
        std::string digits(name.substr(7, end - 7));
        if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
        pid_t pid = static_cast<pid_t>(std::stol(digits));
        if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
        ::rmdir((parent / e->d_name).c_str());
    }
    ::closedir(dir);
}

struct Control {
    std::string file, value;
    bool optional = false;  // skipped when the kernel does not offer it (swap accounting)
};

// Creates parent/name with the given limits; a message (and nothing left behind) on failure.
std::optional<std::string> make_cgroup(const fs::path& parent, const std::string& name,
                                       const std::vector<Control>& controls, std::vector<fs::path>& made) {
    fs::path dir = parent / name;
    if (::mkdir(dir.c_str(), 0755) != 0) return errno_text(dir);
    for (const auto& c : controls) {
        if (c.optional && ::access((dir / c.file).c_str(), F_OK) != 0) continue;
        if (auto error = write_control(dir / c.file, c.value)) {
            ::rmdir(dir.c_str());
            return error;
        }
    }
    made.push_back(dir);
    return std::nullopt;
}

std::string size_text(std::uint64_t bytes) {
    for (auto [shift, unit] : {std::pair{30, "G"}, std::pair{20, "M"}, std::pair{10, "K"}})
        if (bytes % (1ULL << shift) == 0) return std::to_string(bytes >> shift) + unit;
    return std::to_string(bytes) + " bytes";
}

}  // namespace

CgroupDirs find_cgroup_dirs(std::string_view mountinfo, std::string_view proc_self_cgroup) {
    // Our path in each hierarchy: "0::/path" for v2, "ID:memory:/path" (controllers comma-separated) for v1.
    std::string v2_path, memory_path, pids_path;
    bool have_v2 = false;
    for (auto line : split(proc_self_cgroup, '\n')) {
        auto fields = split(line, ':');
        if (fields.size() < 3) continue;
        // The path may itself contain ':'.
        std::string path(line.substr(fields[0].size() + fields[1].size() + 2));
        if (fields[0] == "0" && fields[1].empty()) {
            v2_path = path;
            have_v2 = true;
            continue;
        }
        for (auto controller : split(fields[1], ',')) {
            if (controller == "memory") memory_path = path;
            if (controller == "pids") pids_path = path;
        }
    }
    CgroupDirs dirs;
    // mountinfo: ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS
    for (auto line : split(mountinfo, '\n')) {
        auto fields = split(line, ' ');
        std::size_t dash = 0;
        while (dash < fields.size() && fields[dash] != "-")
            ++dash;
        if (dash < 5 || fields.size() < dash + 4) continue;
        std::string root = unescape(fields[3]), mount_point = unescape(fields[4]);
        std::string_view type = fields[dash + 1];
        if (type == "cgroup2" && have_v2 && dirs.unified.empty()) {
            dirs.unified = inside_mount(mount_point, root, v2_path);
            std::string parent = fs::path(v2_path).parent_path().string();
            if (!dirs.unified.empty() && v2_path != "/" && v2_path != root)
                dirs.unified_parent = inside_mount(mount_point, root, parent);
        } else if (type == "cgroup") {
            for (auto option : split(fields[dash + 3], ',')) {
                if (option == "memory" && !memory_path.empty() && dirs.v1_memory.empty())
                    dirs.v1_memory = inside_mount(mount_point, root, memory_path);
                if (option == "pids" && !pids_path.empty() && dirs.v1_pids.empty())
                    dirs.v1_pids = inside_mount(mount_point, root, pids_path);
            }
        }
    }
    return dirs;
}

CgroupDirs read_cgroup_dirs() {
    return find_cgroup_dirs(read_file("/proc/self/mountinfo"), read_file("/proc/self/cgroup"));
}

bool remove_cgroups_of(pid_t supervisor) {
    const CgroupDirs dirs = read_cgroup_dirs();
    const std::string prefix = "cordon-" + std::to_string(supervisor) + "-";
    bool none_left = true;
    for (const auto* parent : {&dirs.unified, &dirs.unified_parent, &dirs.v1_memory, &dirs.v1_pids}) {
        if (parent->empty()) continue;
        DIR* dir = ::opendir(parent->c_str());
        if (!dir) continue;
        while (dirent* e = ::readdir(dir)) {
            if (std::string_view(e->d_name).substr(0, prefix.size()) != prefix) continue;
            if (::rmdir((*parent / e->d_name).c_str()) != 0 && errno != ENOENT) none_left = false;
        }
        ::closedir(dir);
    }
    return none_left;
}

std::variant<JailLimits, std::string> JailLimits::create(const LimitRequest& request, const CgroupDirs& dirs,
                                                         const std::string& name) {
    JailLimits out;
    const auto& memory = request.memory_bytes;
    const auto& pids = request.max_pids;
    bool memory_done = !memory, pids_done = !pids;
    std::vector<std::string> in_force;
    std::string memory_why = "no memory cgroup", pids_why = "no pids cgroup";
    for (const auto* dir : {&dirs.unified, &dirs.unified_parent, &dirs.v1_memory, &dirs.v1_pids})
        if (!dir->empty()) remove_stale(*dir);

    // v2: one cgroup for both. Our cgroup offers a controller (cgroup.controllers) when its parent passes it
    // down to its children: a sibling of ours gets it too.
    if (!dirs.unified.empty() && (memory || pids)) {
        std::string offered = read_file(dirs.unified / "cgroup.controllers");
        bool use_memory = memory && has_word(offered, "memory");
        bool use_pids = pids && has_word(offered, "pids");
        std::vector<Control> controls;
        if (use_memory) {
            controls.push_back({"memory.max", std::to_string(*memory)});
            // Why: otherwise the kernel swaps the jail out instead of limiting it.
            controls.push_back({"memory.swap.max", "0", true});
        }
        if (use_pids) controls.push_back({"pids.max", std::to_string(*pids)});
        std::optional<std::string> error;
        if (!controls.empty()) {
            // First choice, a child of our own cgroup: it stays within whatever limits the caller has. The
            // controllers must be enabled for our children, which the kernel refuses (EBUSY) while processes
            // live in our cgroup (cordon at least), except in the root.
            std::string enabled = read_file(dirs.unified / "cgroup.subtree_control");
            for (const char* c : {"memory", "pids"}) {
                bool wanted = std::string_view(c) == "memory" ? use_memory : use_pids;
                if (!error && wanted && !has_word(enabled, c))
                    error = write_control(dirs.unified / "cgroup.subtree_control", std::string("+") + c);
            }
            if (!error) error = make_cgroup(dirs.unified, name, controls, out.cgroups_);
            // Otherwise a sibling (where we may create one: root, or a subtree delegated to our user).
            if (error && !dirs.unified_parent.empty()) {
                auto sibling_error = make_cgroup(dirs.unified_parent, name, controls, out.cgroups_);
                error =
                    sibling_error ? std::optional<std::string>(*error + "; " + *sibling_error) : std::nullopt;
            }
        }
        if (error) {
            if (use_memory) memory_why = "cgroup v2: " + *error;
            if (use_pids) pids_why = "cgroup v2: " + *error;
        } else {
            if (use_memory) {
                memory_done = true;
                in_force.push_back("--memory " + size_text(*memory) + " for the whole jail (cgroup v2)");
            }
            if (use_pids) {
                pids_done = true;
                in_force.push_back("--pids " + std::to_string(*pids) + " for the whole jail (cgroup v2)");
            }
        }
    }
    // v1: a cgroup in each hierarchy (needs the right to create one there: root).
    if (!memory_done && !dirs.v1_memory.empty()) {
        // memsw (memory + swap) when swap accounting is on; set after the memory limit, which it may not
        // undercut.
        std::vector<Control> controls{{"memory.limit_in_bytes", std::to_string(*memory)},
                                      {"memory.memsw.limit_in_bytes", std::to_string(*memory), true}};
        if (auto error = make_cgroup(dirs.v1_memory, name, controls, out.cgroups_)) {
            memory_why = "cgroup v1: " + *error;
        } else {
            memory_done = true;
            in_force.push_back("--memory " + size_text(*memory) + " for the whole jail (cgroup v1)");
        }
    }
    if (!pids_done && !dirs.v1_pids.empty()) {
        if (auto error =
                make_cgroup(dirs.v1_pids, name, {{"pids.max", std::to_string(*pids)}}, out.cgroups_)) {
            pids_why = "cgroup v1: " + *error;
        } else {
            pids_done = true;
            in_force.push_back("--pids " + std::to_string(*pids) + " for the whole jail (cgroup v1)");
        }
    }

    // The fallback: rlimits, applied by the command to itself.
    if (!memory_done) {
        out.rlimit_as = *memory;
        in_force.push_back("--memory " + size_text(*memory) + " per process (rlimit RLIMIT_AS; " +
                           memory_why + ")");
    }
    if (!pids_done) {
        if (request.command_is_host_root) {
            // Why: the kernel does not apply RLIMIT_NPROC to the host's root user; it would limit nothing.
            std::string what = "--pids: no cgroup can limit the jail's processes (" + pids_why +
                               ") and RLIMIT_NPROC does not apply to the host's root";
            if (!request.best_effort)
                return what + "; give --user, or --best-effort to run without the limit";
            detail::say("warning: --best-effort: running without a process limit: " + what);
        } else {
            out.rlimit_nproc = *pids;
            in_force.push_back("--pids " + std::to_string(*pids) +
                               " processes of the user (rlimit RLIMIT_NPROC; " + pids_why + ")");
        }
    }
    if (!in_force.empty()) {
        out.notice = "note: limits in force: ";
        for (std::size_t i = 0; i < in_force.size(); ++i)
            out.notice += (i ? "; " : "") + in_force[i];
    }
    return out;
}

JailLimits::JailLimits(JailLimits&& other) noexcept
    : rlimit_as(other.rlimit_as),
      rlimit_nproc(other.rlimit_nproc),
      notice(std::move(other.notice)),
      cgroups_(std::move(other.cgroups_)) {
    other.cgroups_.clear();
}

JailLimits& JailLimits::operator=(JailLimits&& other) noexcept {
    if (this != &other) {
        remove();
        rlimit_as = other.rlimit_as;
        rlimit_nproc = other.rlimit_nproc;
        notice = std::move(other.notice);
        cgroups_ = std::move(other.cgroups_);
        other.cgroups_.clear();
    }
    return *this;
}

std::optional<std::string> JailLimits::enter(pid_t pid) const {
    for (const auto& dir : cgroups_)
        if (auto error = write_control(dir / "cgroup.procs", std::to_string(pid)))
            return "cannot move the jail into its cgroup: " + *error;
    return std::nullopt;
}

bool JailLimits::remove() {
    bool all = true;
    for (const auto& dir : cgroups_) {
        // The last process leaves the cgroup as it exits, a moment after its parent saw it go: retry briefly.
        bool removed = false;
        for (int attempt = 0; attempt < 200 && !removed; ++attempt) {
            if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) {
                removed = true;
            } else if (errno == EBUSY) {
                timespec ms{0, 1000000};
                ::nanosleep(&ms, nullptr);
            } else {
                break;
            }
        }
        all = all && removed;
    }
    cgroups_.clear();
    return all;
}

}  // namespace cordon::jail
