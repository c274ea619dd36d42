// The jail's process model. The supervisor (the caller) clones the jail child into new namespaces, writes its
// id maps, and receives the proxy listeners; the child (PID 1 of the new PID namespace) runs the setup
// pipeline, forks the command, restricts it and becomes its init.
#include "jail/jail.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "jail/detail/setup.hpp"

extern char** environ;

namespace cordon::jail {

int exit_status(int wait_status) {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
    return 125;
}

namespace detail {

std::string Failure::message() const {
    std::string m = what;
    if (err != 0) m += ": " + std::string(std::strerror(err));
    m += " (" + std::string(where.file_name()) + ":" + std::to_string(where.line()) + ")";
    return m;
}

void say(const std::string& line) {
    std::string out = "cordon: " + line + "\n";
    ssize_t n = ::write(2, out.data(), out.size());
    (void)n;
}

namespace {

// Exit status of the jail when its setup failed (the command did not run), as env(1) and container runtimes
// do.
constexpr int kSetupFailed = 125;

struct Step {
    const char* name;
    Result (*run)(Context&);
    bool optional;  // may be skipped with --best-effort
};

// Runs steps in order; a failure stops the pipeline unless the step is optional and best effort was asked
// for.
bool run_steps(Context& ctx, std::initializer_list<Step> steps) {
    for (const auto& step : steps) {
        Result r = step.run(ctx);
        if (!r) continue;
        if (step.optional && ctx.config.best_effort) {
            say("warning: --best-effort: running without " + std::string(step.name) + ": " + r->message());
            continue;
        }
        say("cannot set up the jail: " + std::string(step.name) + ": " + r->message());
        return false;
    }
    return true;
}

Result set_hostname(Context&) {
    if (::sethostname("cordon", 6) != 0) return fail("sethostname");
    return std::nullopt;
}

Result setup_network(Context& ctx) {
    if (!ctx.config.network) return std::nullopt;
    if (auto r = bring_up_loopback(ctx)) return r;
    return create_listeners(ctx);
}

// The command process: restrictions in dependency order, then exec. Never returns.
[[noreturn]] void exec_command(Context& ctx) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    // Limits first (rlimits need no privilege to lower), then privileges (capabilities are needed to drop the
    // bounding set and change uid), no_new_privs, Landlock, and seccomp last: it refuses calls made above.
    bool ok = run_steps(ctx, {{"resource limits", apply_limits, true},
                              {"privilege drop", drop_privileges, false},
                              {"Landlock", apply_landlock, true},
                              {"seccomp filter", apply_seccomp, true}});
    if (!ok) ::_exit(kSetupFailed);

    std::vector<char*> argv;
    for (const auto& a : ctx.config.argv)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& e : ctx.config.env)
        envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    environ = envp.data();  // execvp searches the command's PATH
    // A file descriptor inherited from the caller reaches whatever it points to, whatever the mounts say:
    // only 0-2 survive exec.
    ::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
    ::execvp(argv[0], argv.data());
    int err = errno;
    say("cannot run " + ctx.config.argv[0] + ": " + std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
}

[[noreturn]] void child_main(const JailConfig& config, int fd) {
    // The jail dies with the supervisor. If the supervisor is already gone, the read below sees EOF.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    char go = 0;
    if (::read(fd, &go, 1) != 1) ::_exit(kSetupFailed);

    Context ctx{config, fd, {}};
    bool ok = run_steps(ctx, {{"hostname", set_hostname, true},
                              {"filesystem", apply_mount_plan, false},
                              {"network", setup_network, false},
                              {"listener hand-over", send_listeners, false}});
    if (!ok) ::_exit(kSetupFailed);

    pid_t command = ::fork();
    if (command < 0) {
        say("cannot set up the jail: fork the command: " + std::string(std::strerror(errno)));
        ::_exit(kSetupFailed);
    }
    if (command == 0) {
        ::close(fd);
        exec_command(ctx);
    }
    ::close(fd);
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    run_init(command);
}

bool write_file(const std::string& path, const std::string& content) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
    ::close(fd);
    return ok;
}

class JailImpl final : public Jail {
  public:
    ~JailImpl() override {
        if (pid_ > 0 && !status_) {
            kill();
            wait();
        }
        for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
            // Only if still what we made: an empty directory or an empty file.
            struct stat st {};
            if (::lstat(it->path.c_str(), &st) != 0) continue;
            if (it->directory && S_ISDIR(st.st_mode)) ::rmdir(it->path.c_str());
            if (!it->directory && S_ISREG(st.st_mode) && st.st_size == 0) ::unlink(it->path.c_str());
        }
        for (auto& l : listeners_)
            if (l.fd >= 0) ::close(l.fd);
        if (sigfd_ >= 0) ::close(sigfd_);
        if (sock_ >= 0) ::close(sock_);
        ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    }

    pid_t pid() const override { return pid_; }
    std::vector<Listener> take_listeners() override { return std::move(listeners_); }
    int signal_fd() const override { return sigfd_; }

    std::optional<int> handle_signals() override {
        signalfd_siginfo info{};
        while (::read(sigfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
            int sig = static_cast<int>(info.ssi_signo);
            if (sig == SIGCHLD) continue;
            // The terminal sends SIGINT, SIGQUIT, SIGWINCH to the whole foreground process group, the command
            // included: relaying those would deliver them twice.
            if (info.ssi_code == SI_KERNEL) continue;
            ::kill(pid_, sig);
        }
        reap(WNOHANG);
        return status_;
    }

    void kill() override {
        if (pid_ > 0 && !status_) ::kill(pid_, SIGKILL);
    }

    int wait() override {
        while (!status_)
            reap(0);
        return *status_;
    }

    bool start(const JailConfig& config, std::string& error);

  private:
    void reap(int options) {
        if (status_) return;
        int st = 0;
        pid_t r = ::waitpid(pid_, &st, options);
        if (r == pid_) status_ = exit_status(st);
        if (r < 0 && errno != EINTR) status_ = kSetupFailed;
    }

    bool write_id_maps(const JailConfig& config, std::string& error);

    pid_t pid_ = -1;
    int sigfd_ = -1;
    int sock_ = -1;
    sigset_t old_mask_{};
    std::optional<int> status_;
    std::vector<Listener> listeners_;
    std::vector<Placeholder> created_;
};

bool JailImpl::write_id_maps(const JailConfig& config, std::string& error) {
    std::string proc = "/proc/" + std::to_string(pid_);
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
    std::string uid_map = std::to_string(uid) + " " + std::to_string(uid) + " 1\n";
    std::string gid_map = std::to_string(gid) + " " + std::to_string(gid) + " 1\n";
    if (uid == 0 && config.run_as && config.run_as->first != 0) {
        // Root stays root inside (the jail's init needs a mapped uid to create mount points) and the command
        // switches to the requested user, mapped to itself.
        uid_map += std::to_string(config.run_as->first) + " " + std::to_string(config.run_as->first) + " 1\n";
        if (config.run_as->second != gid)
            gid_map +=
                std::to_string(config.run_as->second) + " " + std::to_string(config.run_as->second) + " 1\n";
    }
    // An unprivileged user may map its own gid only after giving up setgroups(2) in the namespace (otherwise
    // it could drop a group that is used to deny it access).
    if (uid != 0 && !write_file(proc + "/setgroups", "deny")) {
        error = "cannot write " + proc + "/setgroups: " + std::strerror(errno);
        return false;
    }
    if (!write_file(proc + "/uid_map", uid_map)) {
        error = "cannot write the jail's uid map: " + std::string(std::strerror(errno));
        return false;
    }
    if (!write_file(proc + "/gid_map", gid_map)) {
        error = "cannot write the jail's gid map: " + std::string(std::strerror(errno));
        return false;
    }
    return true;
}

bool JailImpl::start(const JailConfig& config, std::string& error) {
    for (const auto& ph : config.plan.placeholders) {
        int rc;
        if (ph.directory) {
            rc = ::mkdir(ph.path.c_str(), 0755);
        } else {
            rc = ::open(ph.path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
            if (rc >= 0) ::close(rc);
        }
        if (rc < 0 && errno != EEXIST) {
            error = "cannot create the placeholder " + ph.path.string() + " that keeps " + ph.why +
                    " from being created: " + std::strerror(errno);
            return false;
        }
        if (rc >= 0) created_.push_back(ph);
    }

    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        error = std::string("socketpair: ") + std::strerror(errno);
        return false;
    }
    sock_ = pair[0];

    sigset_t set = forwarded_signals(true);
    ::sigprocmask(SIG_BLOCK, &set, &old_mask_);
    sigfd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd_ < 0) {
        error = std::string("signalfd: ") + std::strerror(errno);
        ::close(pair[1]);
        return false;
    }

    // A fork-like clone: the child continues here with a copy of our memory, in new namespaces. The process
    // is single-threaded at this point (the proxy's loop starts later).
    long flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
                 CLONE_NEWCGROUP | SIGCHLD;
    long child = ::syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr);
    if (child < 0) {
        error = std::string("cannot create the jail's namespaces: ") + std::strerror(errno) +
                (errno == EPERM || errno == ENOSPC ? " (are user namespaces disabled?)" : "");
        ::close(pair[1]);
        return false;
    }
    if (child == 0) {
        ::close(pair[0]);
        child_main(config, pair[1]);
    }
    pid_ = static_cast<pid_t>(child);
    ::close(pair[1]);

    if (!write_id_maps(config, error)) return false;
    char go = 'g';
    if (::write(sock_, &go, 1) != 1) {
        error = std::string("cannot start the jail: ") + std::strerror(errno);
        return false;
    }
    auto listeners = receive_listeners(sock_);
    if (!listeners) {
        error = "the jail could not be set up";
        wait();
        return false;
    }
    listeners_ = std::move(*listeners);
    ::close(sock_);
    sock_ = -1;
    return true;
}

}  // namespace
}  // namespace detail

std::variant<std::unique_ptr<Jail>, std::string> Jail::start(const JailConfig& config) {
    auto jail = std::make_unique<detail::JailImpl>();
    std::string error;
    if (!jail->start(config, error)) return error;
    return std::unique_ptr<Jail>(std::move(jail));
}

}  // namespace cordon::jail
