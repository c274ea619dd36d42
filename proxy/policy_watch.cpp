#include "proxy/policy_watch.hpp"

#include <limits.h>
#include <pwd.h>
#include <sys/inotify.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>

namespace cordon::proxy {

namespace fs = std::filesystem;

namespace {

fs::path absolute_normal(const fs::path& path, const fs::path& base) {
    return (path.is_absolute() ? path : base / path).lexically_normal();
}

fs::path home_directory(const policy::LoadOptions& options) {
    if (!options.home.empty()) return options.home;
    if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') return home;
    if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
    return "/";
}

// Every event that can change what a directory's entries say: a file closed after writing, an entry created,
// removed or renamed in or out (rename-over, ConfigMap `..data` swaps), metadata (a file made readable), and
// the directory itself going away.
constexpr std::uint32_t kMask = IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

class InotifyPolicyWatch final : public PolicyWatch {
  public:
    InotifyPolicyWatch(uv_loop_t* loop, std::function<void()> changed, std::chrono::milliseconds debounce)
        : changed_(std::move(changed)), debounce_(debounce) {
        fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd_ < 0) throw std::runtime_error(std::string("--watch: inotify: ") + std::strerror(errno));
        poll_ = new uv_poll_t;
        timer_ = new uv_timer_t;
        uv_poll_init(loop, poll_, fd_);
        uv_timer_init(loop, timer_);
        poll_->data = timer_->data = this;
        uv_poll_start(poll_, UV_READABLE, [](uv_poll_t* handle, int, int) {
            static_cast<InotifyPolicyWatch*>(handle->data)->drain();
        });
    }
    ~InotifyPolicyWatch() override {
        auto free_handle = [](uv_handle_t* h) {
            if (h->type == UV_POLL)
                delete reinterpret_cast<uv_poll_t*>(h);
            else
                delete reinterpret_cast<uv_timer_t*>(h);
        };
        uv_close(reinterpret_cast<uv_handle_t*>(poll_), free_handle);
        uv_close(reinterpret_cast<uv_handle_t*>(timer_), free_handle);
        ::close(fd_);
    }

    std::vector<std::string> arm(const policy::LoadOptions& options, const policy::Policy& current) override {
        std::vector<std::string> errors;
        // Adding a watch that exists returns its descriptor again; only those no longer wanted are removed
        // (the IN_IGNORED event that removal causes is not a change).
        std::map<int, fs::path> wanted;
        for (fs::path dir : policy_source_directories(options, current)) {
            // A directory that does not exist yet: its nearest existing parent sees it appear.
            std::error_code ec;
            while (!fs::is_directory(dir, ec) && dir.has_relative_path())
                dir = dir.parent_path();
            int wd = inotify_add_watch(fd_, dir.c_str(), kMask);
            if (wd >= 0)
                wanted[wd] = dir;
            else if (errno != ENOENT)  // ENOENT: removed just now; the parent's watch has seen it
                errors.push_back("cannot watch " + dir.string() + ": " + std::strerror(errno));
        }
        for (const auto& [wd, dir] : watches_)
            if (!wanted.count(wd)) inotify_rm_watch(fd_, wd);
        watches_ = std::move(wanted);
        return errors;
    }

    std::vector<fs::path> directories() const override {
        std::vector<fs::path> out;
        for (const auto& [wd, dir] : watches_)
            out.push_back(dir);
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    }

  private:
    void drain() {
        alignas(inotify_event) char buffer[16 * (sizeof(inotify_event) + NAME_MAX + 1)];
        bool any = false;
        for (;;) {
            ssize_t n = ::read(fd_, buffer, sizeof buffer);
            if (n <= 0) break;
            for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
                inotify_event event;
                std::memcpy(&event, buffer + at, sizeof event);
                if (!(event.mask & IN_IGNORED)) any = true;  // IN_Q_OVERFLOW counts: something changed
                at += static_cast<ssize_t>(sizeof(inotify_event) + event.len);
            }
        }
        if (!any) return;
        // Each event restarts the wait: a tool writing several files (or a file in several steps) causes one
        // reload once it is done.
        uv_timer_start(
            timer_, [](uv_timer_t* t) { static_cast<InotifyPolicyWatch*>(t->data)->changed_(); },
            static_cast<std::uint64_t>(debounce_.count()), 0);
    }

    std::function<void()> changed_;
    std::chrono::milliseconds debounce_;
    int fd_ = -1;
    uv_poll_t* poll_ = nullptr;
    uv_timer_t* timer_ = nullptr;
    std::map<int, fs::path> watches_;
};

}  // namespace

std::vector<fs::path> policy_source_directories(const policy::LoadOptions& options,
                                                const policy::Policy& current) {
    std::error_code ec;
    fs::path process_cwd = fs::current_path(ec);
    if (ec) process_cwd = "/";
    const fs::path cwd = absolute_normal(options.cwd.empty() ? process_cwd : options.cwd, process_cwd);
    std::vector<fs::path> dirs;
    const fs::path managed = absolute_normal(options.managed_dir, process_cwd);
    dirs.push_back(managed);
    dirs.push_back(managed / "managed-settings.d");
    auto file_dirs = [&](const fs::path& file) {
        fs::path full = absolute_normal(file, process_cwd);
        dirs.push_back(full.parent_path());
        std::error_code canonical_ec;
        fs::path real = fs::weakly_canonical(full, canonical_ec);
        if (!canonical_ec) dirs.push_back(real.parent_path());
    };
    for (const auto& file : options.settings_files)
        file_dirs(file);
    if (options.discover) {
        dirs.push_back(cwd / ".claude");
        dirs.push_back(absolute_normal(home_directory(options), process_cwd) / ".claude");
    }
    for (const auto& file : current.files_read())
        file_dirs(file);
    std::sort(dirs.begin(), dirs.end());
    dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
    return dirs;
}

std::unique_ptr<PolicyWatch> PolicyWatch::create(uv_loop_s* loop, std::function<void()> changed,
                                                 std::chrono::milliseconds debounce) {
    return std::make_unique<InotifyPolicyWatch>(loop, std::move(changed), debounce);
}

}  // namespace cordon::proxy
