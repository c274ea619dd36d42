// Sessions (see session.hpp). The control socket's messages: from the client, one byte (the request; a join
// carries the client's descriptors 0-2 with it as SCM_RIGHTS) followed by a frame (a byte count, then JSON);
// from the host, frames of JSON: {"started": PID}, {"exit": STATUS}, {"error": TEXT}, {"stopped": true}, or
// the session's status.
#include "run/session.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "jail/cgroup.hpp"
#include "jail/detail/handover.hpp"
#include "jail/detail/setup.hpp"
#include "jail/host_view.hpp"
#include "jail/jail.hpp"
#include "proxy/proxy.hpp"
#include "run/environment.hpp"
#include "run/terminal_relay.hpp"

extern char** environ;

namespace cordon::run {

namespace fs = std::filesystem;
using jail::detail::receive_fds;
using jail::detail::receive_frame;
using jail::detail::send_fds;
using jail::detail::send_frame;

namespace {

// The signals a joining client relays to its command (the terminal's ^C reaches the client, not the
// command, which runs in the session's jail).
constexpr int kRelayed[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

// A directory the user owns alone, made if missing. `what` names it in the message.
std::optional<std::string> private_directory(const fs::path& dir, const char* what = "session directory") {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        return std::string("cannot make the ") + what + " " + dir.string() + ": " + std::strerror(errno);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0)
        return std::string("cannot read the ") + what + " " + dir.string() + ": " + std::strerror(errno);
    // Why so strict: another user who can write here could put a socket of their own under a session's name
    // and receive the descriptors and environment of the next joining command.
    if (!S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0)
        return std::string("the ") + what + " " + dir.string() +
               " is not a directory of yours alone (mode 0700): refusing to use it";
    return std::nullopt;
}

// The session's entry in its uid's registry (jail::host_rules::session_registry), for its socket `sock`
// (device `dev`, inode `ino`): the entry's path, or why it could not be made. Why a registry and not the
// session directory: that one depends on XDG_RUNTIME_DIR, which a run (and the notifier refusing its
// connects to sessions) may not share with the session; the registry's place depends on the uid alone.
std::variant<fs::path, std::string> register_socket(const fs::path& sock, dev_t dev, ino_t ino) {
    const fs::path dir = jail::host_rules::session_registry(::getuid());
    if (auto why = private_directory(dir.parent_path(), "session registry's directory")) return *why;
    if (auto why = private_directory(dir, "session registry")) return *why;
    const fs::path entry = dir / jail::host_rules::session_registry_entry(dev, ino);
    // An entry of that name is one a session gone without its cleaner left (a reboot with /tmp on disk):
    // the inode is ours now.
    const int fd = ::open(entry.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return "cannot register the session in " + dir.string() + ": " + std::strerror(errno);
    const std::string text = sock.string() + "\n";  // for whoever reads it; the name is what counts
    const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    if (!written) {
        ::unlink(entry.c_str());
        return "cannot register the session in " + dir.string() + ": " + std::strerror(errno);
    }
    return entry;
}

bool owned_directory(const fs::path& dir) {
    struct stat st {};
    return ::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::getuid() &&
           (st.st_mode & 022) == 0;
}

// A connection to the socket at `path`, or why not (`err`: the errno, when asked for).
std::variant<int, std::string> connect_to(const fs::path& path, int* err = nullptr) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.native().size() >= sizeof addr.sun_path) return std::string("the socket path is too long");
    std::memcpy(addr.sun_path, path.c_str(), path.native().size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::string(std::strerror(errno));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        if (err) *err = errno;
        std::string why = std::strerror(errno);
        ::close(fd);
        return why;
    }
    return fd;
}

std::variant<fs::path, std::string> socket_path(const std::string& name) {
    if (auto why = check_session_name(name)) return *why;
    auto dir = session_directory();
    if (auto* why = std::get_if<std::string>(&dir)) return *why;
    return std::get<fs::path>(dir) / (name + ".sock");
}

// A connection to the session `name`, or -1 after saying why.
int connect_session(const std::string& name) {
    auto path = socket_path(name);
    if (auto* why = std::get_if<std::string>(&path)) {
        std::cerr << "cordon: " << *why << "\n";
        return -1;
    }
    auto fd = connect_to(std::get<fs::path>(path));
    if (auto* why = std::get_if<std::string>(&fd)) {
        std::cerr << "cordon: no session named " << name << " (" << *why << "; cordon session list)\n";
        return -1;
    }
    return std::get<int>(fd);
}

std::optional<nlohmann::json> receive_answer(int fd) {
    std::string body;
    if (!receive_frame(fd, body)) return std::nullopt;
    auto json = nlohmann::json::parse(body, nullptr, false);
    if (json.is_discarded() || !json.is_object()) return std::nullopt;
    return json;
}

// Sends a request; when the session refused the connection before reading it (another user, a process of
// the jail), `why` is what it said.
bool send_request(int fd, char op, const nlohmann::json& body, std::string& why, const int* fds = nullptr,
                  std::size_t nfds = 0) {
    if (send_fds(fd, &op, 1, fds, nfds) == 1 && send_frame(fd, body.dump())) return true;
    why = std::strerror(errno);
    if (auto answer = receive_answer(fd); answer && answer->contains("error"))
        why = answer->value("error", why);
    return false;
}

std::string ns_link(pid_t pid, const char* ns) {
    char buf[64] = {};
    const std::string path = "/proc/" + std::to_string(pid) + "/ns/" + ns;
    ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

std::variant<fs::path, std::string> session_directory() {
    const uid_t uid = ::getuid();
    // $XDG_RUNTIME_DIR as /run/user/UID: only when it is the user's, not writable by others (another user
    // who can write there could replace the cordon directory in it); else as if it were unset.
    if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg == '/' && owned_directory(xdg)) {
        fs::path dir = fs::path(xdg) / "cordon";
        if (auto why = private_directory(dir)) return *why;
        return dir;
    }
    fs::path run_user = "/run/user/" + std::to_string(uid);
    fs::path dir =
        owned_directory(run_user) ? run_user / "cordon" : fs::path("/tmp/cordon-" + std::to_string(uid));
    if (auto why = private_directory(dir)) return *why;
    return dir;
}

std::vector<fs::path> session_state_directories(const std::vector<uid_t>& uids) {
    std::vector<fs::path> out;
    auto add = [&](const fs::path& dir) {
        if (std::find(out.begin(), out.end(), dir) == out.end()) out.push_back(dir);
    };
    if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg == '/')
        add(fs::path(xdg).lexically_normal() / "cordon");
    for (uid_t uid : uids) {
        const fs::path registry = jail::host_rules::session_registry(uid);
        add(registry.parent_path());
        add("/tmp/cordon-" + std::to_string(uid));
        add("/run/user/" + std::to_string(uid) + "/cordon");
        // Each entry holds its socket's path (register_socket): sessions of another runtime directory.
        DIR* dir = ::opendir(registry.c_str());
        if (dir == nullptr) continue;
        while (const dirent* entry = ::readdir(dir)) {
            if (entry->d_name[0] == '.') continue;
            const int fd =
                ::openat(::dirfd(dir), entry->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
            if (fd < 0) continue;
            char buf[4096];
            const ssize_t n = ::read(fd, buf, sizeof buf);
            ::close(fd);
            if (n <= 0) continue;
            const std::string text(buf, static_cast<std::size_t>(n));
            const fs::path sock(text.substr(0, text.find('\n')));
            if (sock.is_absolute() && sock.has_parent_path()) add(sock.lexically_normal().parent_path());
        }
        ::closedir(dir);
    }
    return out;
}

std::optional<std::string> check_session_name(const std::string& name) {
    if (name.empty() || name.size() > 64 || name[0] == '.' || name[0] == '-' ||
        name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
            std::string::npos)
        return "a session name is 1 to 64 of A-Z a-z 0-9 . _ - (not starting with . or -), not '" + name +
               "'";
    return std::nullopt;
}

// ---- the supervisor's side ----

struct SessionHost::Client {
    SessionHost* host = nullptr;
    int fd = -1;
    uv_poll_t poll{};
    std::uint32_t id = 0;  // its command, once asked for
    bool running = false;
};

struct SessionHost::Handles {
    uv_poll_t listen{};
    uv_timer_t linger{};
    bool open = false;
};

std::variant<std::unique_ptr<SessionHost>, std::string> SessionHost::create(const std::string& name,
                                                                            std::optional<double> linger,
                                                                            int ready_fd) {
    auto path = socket_path(name);
    if (auto* why = std::get_if<std::string>(&path)) return *why;
    std::unique_ptr<SessionHost> host(new SessionHost);
    host->name_ = name;
    host->socket_path_ = std::get<fs::path>(path);
    host->dir_ = host->socket_path_.parent_path();
    host->linger_ = linger;
    host->ready_fd_ = ready_fd;
    const fs::path& sock = host->socket_path_;
    struct stat st {};
    if (::lstat(sock.c_str(), &st) == 0) {
        auto fd = connect_to(sock);
        if (auto* live = std::get_if<int>(&fd)) {
            ::close(*live);
            return "a session named " + name + " is running (cordon session stop " + name + ")";
        }
        if (!S_ISSOCK(st.st_mode)) return sock.string() + " exists and is not a socket";
        ::unlink(sock.c_str());  // a session that is gone
    }
    host->listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (host->listen_fd_ < 0) return std::string("socket: ") + std::strerror(errno);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (sock.native().size() >= sizeof addr.sun_path)
        return "the session's socket path is too long: " + sock.string();
    std::memcpy(addr.sun_path, sock.c_str(), sock.native().size() + 1);
    // Mode 0600 from its first moment (the umask applies to the socket file), in a directory of the user's
    // alone: the file modes keep others from connecting, SO_PEERCRED checks every peer all the same.
    const mode_t old = ::umask(0177);
    const int bound = ::bind(host->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    const int bind_errno = errno;
    ::umask(old);
    if (bound != 0) return "cannot create " + sock.string() + ": " + std::strerror(bind_errno);
    if (::lstat(sock.c_str(), &st) != 0) return "cannot read " + sock.string() + ": " + std::strerror(errno);
    host->socket_dev_ = st.st_dev;
    host->socket_ino_ = st.st_ino;
    // Registered before it listens (a connect until then is refused by the kernel): from its first
    // connection on, no jail's notifier performs a connect to it (jail/host_view.hpp).
    auto entry = register_socket(sock, st.st_dev, st.st_ino);
    if (auto* why = std::get_if<std::string>(&entry)) {
        ::unlink(sock.c_str());
        return *why;
    }
    host->registry_entry_ = std::get<fs::path>(entry);
    if (::listen(host->listen_fd_, 64) != 0) {
        const int err = errno;
        ::unlink(sock.c_str());
        ::unlink(host->registry_entry_.c_str());
        return "cannot listen on " + sock.string() + ": " + std::strerror(err);
    }

    // The cleaner: what the supervisor would remove on its way out, removed when it is gone however it went
    // (a SIGKILL runs no code of its own). The jail itself needs no cleaner: its init dies with the
    // supervisor (PR_SET_PDEATHSIG), and its mounts and network with its namespaces.
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
    const pid_t supervisor = ::getpid();
    const std::string sock_text = sock.string();
    const std::string entry_text = host->registry_entry_.string();
    const dev_t dev = host->socket_dev_;
    const ino_t ino = host->socket_ino_;
    const pid_t cleaner = ::fork();
    if (cleaner < 0) return std::string("fork: ") + std::strerror(errno);
    if (cleaner == 0) {
        ::setsid();  // not in the terminal's process group: ^C or a hang-up of the starter leaves it
        const int in = ::fcntl(pipe_fds[0], F_DUPFD_CLOEXEC, 3);
        const int null = ::open("/dev/null", O_RDWR);
        for (int i = 0; i < 3 && null >= 0; ++i)
            ::dup2(null, i);
        jail::detail::close_descriptors(3U, static_cast<unsigned>(in) - 1, false);
        jail::detail::close_descriptors(static_cast<unsigned>(in) + 1, ~0U, false);
        char byte;
        while (::read(in, &byte, 1) != 0 && errno == EINTR) {
        }
        // The supervisor is gone and its listener with it. The entry first: while the socket file is
        // there its inode cannot be another session's, whose entry would have the same name.
        ::unlink(entry_text.c_str());
        struct stat now {};
        if (::lstat(sock_text.c_str(), &now) == 0 && now.st_dev == dev && now.st_ino == ino)
            ::unlink(sock_text.c_str());
        // The init is killed with its supervisor; its cgroup can go once its last process has.
        for (int i = 0; i < 500 && !jail::remove_cgroups_of(supervisor); ++i)
            ::usleep(10000);
        ::_exit(0);
    }
    ::close(pipe_fds[0]);
    host->cleaner_fd_ = pipe_fds[1];
    host->cleaner_pid_ = cleaner;
    return host;
}

SessionHost::~SessionHost() {
    if (listen_fd_ >= 0) ::close(listen_fd_);
    if (cleaner_fd_ >= 0) ::close(cleaner_fd_);
    if (ready_fd_ >= 0) ::close(ready_fd_);
}

void SessionHost::attach(uv_loop_s* loop, jail::Jail* jail, proxy::Proxy* proxy, bool network) {
    loop_ = loop;
    jail_ = jail;
    proxy_ = proxy;
    network_ = network;
    started_ = std::time(nullptr);
    last_activity_ = std::chrono::steady_clock::now();
    jail_pid_ns_ = ns_link(jail->pid(), "pid");
    own_pid_ns_ = ns_link(::getpid(), "pid");
    handles_ = std::make_unique<Handles>();
    handles_->open = true;
    uv_poll_init(loop, &handles_->listen, listen_fd_);
    handles_->listen.data = this;
    uv_poll_start(&handles_->listen, UV_READABLE,
                  [](uv_poll_t* h, int, int) { static_cast<SessionHost*>(h->data)->accept_client(); });
    uv_timer_init(loop, &handles_->linger);
    handles_->linger.data = this;
    uv_timer_start(
        &handles_->linger, [](uv_timer_t* h) { static_cast<SessionHost*>(h->data)->check_linger(); }, 200,
        200);
}

bool SessionHost::on_jail_event() {
    for (;;) {
        bool closed = false;
        auto event = jail_->read_session_event(closed);
        if (closed) return false;
        if (!event) return true;
        last_activity_ = std::chrono::steady_clock::now();
        using Kind = jail::SessionEvent::Kind;
        if (event->kind == Kind::Ready && !ready_) {
            ready_ = true;
            // Detached from whoever started it: its terminal or pipes are theirs again.
            const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
            for (int i = 0; i < 3 && null >= 0; ++i)
                ::dup2(null, i);
            if (null > 2) ::close(null);
            if (ready_fd_ >= 0) {
                ssize_t n = ::write(ready_fd_, "ready\n", 6);
                (void)n;
                ::close(ready_fd_);
                ready_fd_ = -1;
            }
            continue;
        }
        for (auto& [fd, client] : clients_) {
            if (!client->running || client->id != event->id) continue;
            if (event->kind == Kind::Started) {
                ++commands_;
                send(*client, nlohmann::json{{"started", event->value}}.dump());
            } else if (event->kind == Kind::Exited) {
                client->running = false;
                send(*client, nlohmann::json{{"exit", event->value}}.dump());
                close_client(fd);
            }
            break;
        }
    }
}

void SessionHost::accept_client() {
    for (;;) {
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) return;
        last_activity_ = std::chrono::steady_clock::now();
        auto client = std::make_unique<Client>();
        client->host = this;
        client->fd = fd;
        // A client that stops mid-message does not hold the session up for longer than this.
        timeval timeout{2, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
        // Why check the peer and not only the socket's mode: the mode is the first line; a descriptor of the
        // socket passed on, or root's connection, would pass it. A process of the jail (the jailed command,
        // should a policy let it reach Unix sockets) has our uid but must not start commands or stop the
        // session: its pid namespace tells it.
        ucred peer{};
        socklen_t len = sizeof peer;
        std::string refused;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0)
            refused = "cannot read the peer's credentials";
        else if (peer.uid != ::getuid())
            refused = "session " + name_ + " belongs to uid " + std::to_string(::getuid()) + ", not to uid " +
                      std::to_string(peer.uid);
        else if (peer.pid <= 0 || (!jail_pid_ns_.empty() && ns_link(peer.pid, "pid") == jail_pid_ns_))
            refused = "a process inside session " + name_ + " cannot control it";
        // Not only this session's jail: any jail with a pid namespace (a plain `cordon run` whose policy
        // reaches Unix sockets, a namespace nested in this session's jail) must not join a session whose
        // policy may be wider than its own, nor stop it. A legitimate client is a process of the host, in
        // the supervisor's own pid namespace; a peer whose namespace cannot be read (gone, its pid reused)
        // is refused too.
        else if (const std::string ns = ns_link(peer.pid, "pid"); ns.empty() || ns != own_pid_ns_)
            refused = "session " + name_ +
                      " serves only processes outside any jail (a pid namespace of "
                      "their own)";
        if (!refused.empty()) {
            send_frame(fd, nlohmann::json{{"error", refused}}.dump());
            ::close(fd);
            continue;
        }
        Client& c = *client;
        clients_[fd] = std::move(client);
        uv_poll_init(loop_, &c.poll, fd);
        // libuv made it non-blocking; a request is read whole once its first byte is there (bounded by the
        // timeouts above), so blocking again.
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        c.poll.data = &c;
        uv_poll_start(&c.poll, UV_READABLE, [](uv_poll_t* h, int, int) {
            auto* self = static_cast<Client*>(h->data);
            self->host->read_client(*self);
        });
    }
}

void SessionHost::send(Client& client, const std::string& json) {
    send_frame(client.fd, json);
}

void SessionHost::close_client(int fd) {
    auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    Client* c = it->second.release();
    clients_.erase(it);
    last_activity_ = std::chrono::steady_clock::now();  // the linger counts from the last client's end
    // A client gone while its command runs (killed, or its connection lost): the command goes too, as the
    // command of a `cordon run` whose supervisor is gone. What it started in the background stays.
    if (c->running && jail_) jail_->signal_session_command(c->id, SIGKILL);
    uv_poll_stop(&c->poll);
    uv_close(reinterpret_cast<uv_handle_t*>(&c->poll), [](uv_handle_t* h) {
        auto* closed = static_cast<Client*>(h->data);
        ::close(closed->fd);
        delete closed;
    });
}

void SessionHost::read_client(Client& client) {
    char op = 0;
    int fds[3] = {-1, -1, -1};
    std::size_t nfds = 0;
    const ssize_t n = receive_fds(client.fd, &op, 1, fds, 3, nfds);
    std::string body;
    auto close_fds = [&] {
        for (std::size_t i = 0; i < nfds; ++i)
            ::close(fds[i]);
    };
    if (n != 1 || !receive_frame(client.fd, body)) {
        close_fds();
        close_client(client.fd);
        return;
    }
    last_activity_ = std::chrono::steady_clock::now();
    auto json = nlohmann::json::parse(body, nullptr, false);
    auto error = [&](const std::string& text) {
        close_fds();
        send(client, nlohmann::json{{"error", text}}.dump());
        close_client(client.fd);
    };
    if (json.is_discarded() || !json.is_object()) return error("not a request");
    if (op == 'J') {
        if (client.id != 0 || nfds != 3 || stopping_) return error("not a join request");
        jail::SessionCommand command;
        try {
            command.argv = json.at("argv").get<std::vector<std::string>>();
            std::vector<std::string> env = json.at("env").get<std::vector<std::string>>();
            command.cwd = json.at("cwd").get<std::string>();
            std::vector<char*> envp;
            for (auto& e : env)
                envp.push_back(e.data());
            envp.push_back(nullptr);
            // The same environment as a run's command: the proxy variables point at the session's proxy.
            command.env = jail_environment(envp.data(), network_);
        } catch (const std::exception&) {
            return error("a join request needs argv, env and cwd");
        }
        if (command.argv.empty() || command.cwd.empty() || command.cwd[0] != '/')
            return error("a join request needs a command and an absolute working directory");
        command.id = client.id = next_id_++;
        for (int i = 0; i < 3; ++i)
            command.fds[i] = fds[i];
        client.running = jail_->start_session_command(command);
        close_fds();
        if (!client.running) return error("the session's jail is gone");
        return;
    }
    if (op == 'G') {
        const int sig = json.value("signal", 0);
        bool relayed = false;
        for (int s : kRelayed)
            relayed = relayed || s == sig;
        if (relayed && client.running) jail_->signal_session_command(client.id, sig);
        return;
    }
    if (op == 'L') {
        send(client, status_json());
        close_client(client.fd);
        return;
    }
    if (op == 'S') {
        // Answered once everything is gone (end()).
        auto it = clients_.find(client.fd);
        Client* c = it->second.release();
        clients_.erase(it);
        uv_poll_stop(&c->poll);
        stop_waiters_.push_back(c->fd);
        uv_close(reinterpret_cast<uv_handle_t*>(&c->poll),
                 [](uv_handle_t* h) { delete static_cast<Client*>(h->data); });
        stop();
        return;
    }
    error("unknown request");
}

std::string SessionHost::status_json() const {
    // The jail's processes: those in its pid namespace, but the init.
    std::size_t processes = 0;
    if (DIR* proc = ::opendir("/proc")) {
        while (dirent* e = ::readdir(proc)) {
            if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
            const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
            if (pid != jail_->pid() && ns_link(pid, "pid") == jail_pid_ns_) ++processes;
        }
        ::closedir(proc);
    }
    std::size_t running = 0;
    for (const auto& [fd, c] : clients_)
        running += c->running ? 1 : 0;
    const std::time_t now = std::time(nullptr);
    nlohmann::json out{{"name", name_},
                       {"pid", ::getpid()},
                       {"age_seconds", now - started_},
                       {"commands", commands_},
                       {"running", running},
                       {"processes", processes},
                       {"connections", proxy_ ? proxy_->active_connections() : 0}};
    if (linger_) out["linger_seconds"] = *linger_;
    return out.dump();
}

void SessionHost::check_linger() {
    if (stopping_ || !linger_) return;
    // Every connection counts (the proxy's, host ports', published ports'): a browser on the host using a
    // published port is the session in use, though no command runs.
    const bool busy = !clients_.empty() || (proxy_ && proxy_->active_connections() > 0);
    const auto now = std::chrono::steady_clock::now();
    if (busy) {
        last_activity_ = now;
        return;
    }
    if (std::chrono::duration<double>(now - last_activity_).count() >= *linger_) stop();
}

void SessionHost::stop() {
    if (stopping_) return;
    stopping_ = true;
    // The supervisor reaps the init and ends its loop; end() follows.
    jail_->kill();
}

void SessionHost::end() {
    stopping_ = true;
    for (auto& [fd, client] : clients_)
        if (client->running) send(*client, nlohmann::json{{"error", "session " + name_ + " ended"}}.dump());
    while (!clients_.empty()) {
        auto it = clients_.begin();
        it->second->running = false;
        close_client(it->first);
    }
    if (handles_ && handles_->open) {
        handles_->open = false;
        uv_poll_stop(&handles_->listen);
        uv_timer_stop(&handles_->linger);
        uv_close(reinterpret_cast<uv_handle_t*>(&handles_->listen), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&handles_->linger), nullptr);
    }
    // The listener closed first (nothing connects any more), then the registry's entry, then the file
    // (while it is there its inode cannot be another session's, whose entry would have the same name).
    if (listen_fd_ >= 0) ::close(listen_fd_);
    listen_fd_ = -1;
    if (!registry_entry_.empty()) ::unlink(registry_entry_.c_str());
    registry_entry_.clear();
    struct stat st {};
    if (::lstat(socket_path_.c_str(), &st) == 0 && st.st_dev == socket_dev_ && st.st_ino == socket_ino_)
        ::unlink(socket_path_.c_str());
    // The cleaner has nothing left to do: it exits once our end of its pipe closes; waited for, so that
    // `session stop` returns with no process of the session left.
    if (cleaner_fd_ >= 0) ::close(cleaner_fd_);
    cleaner_fd_ = -1;
    if (cleaner_pid_ > 0) ::waitpid(cleaner_pid_, nullptr, 0);
    cleaner_pid_ = -1;
    for (int fd : stop_waiters_) {
        send_frame(fd, nlohmann::json{{"stopped", true}}.dump());
        ::close(fd);
    }
    stop_waiters_.clear();
}

// ---- the client's side ----

int join_session(const std::string& name, const std::vector<std::string>& command) {
    // As for a run's command: a descriptor on 0-2 that reaches past the jail (a directory, a socket of the
    // host's network) becomes /dev/null.
    std::string error;
    if (!jail::detail::replace_reaching_descriptors(error)) {
        std::cerr << "cordon: " << error << "\n";
        return 125;
    }
    std::error_code ec;
    const fs::path cwd = fs::current_path(ec);
    if (ec) {
        std::cerr << "cordon: cannot read the working directory: " << ec.message() << "\n";
        return 125;
    }
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kRelayed)
        sigaddset(&set, sig);
    ::sigprocmask(SIG_BLOCK, &set, nullptr);
    const int sigfd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    const int fd = connect_session(name);
    if (fd < 0) return 125;
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e)
        env.emplace_back(*e);
    // A terminal on 0-2 is not passed itself: the command gets a pty of the client's, relayed while it runs.
    int fds[3] = {0, 1, 2};
    auto opened = TerminalRelay::open(fds);
    if (auto* why = std::get_if<std::string>(&opened)) {
        std::cerr << "cordon: " << *why << "\n";
        return 125;
    }
    std::unique_ptr<TerminalRelay> terminal = std::move(std::get<std::unique_ptr<TerminalRelay>>(opened));
    std::string why;
    if (!send_request(fd, 'J', {{"argv", command}, {"env", env}, {"cwd", cwd.string()}}, why, fds, 3)) {
        std::cerr << "cordon: session " << name << ": cannot start the command: " << why << "\n";
        return 125;
    }
    if (terminal) terminal->start();
    // No receive timeout here: the command runs as long as it likes.
    for (;;) {
        pollfd p[4] = {{fd, POLLIN, 0}, {sigfd, POLLIN, 0}};
        const std::size_t own = sigfd >= 0 ? 2 : 1;
        const std::size_t relayed = terminal ? terminal->poll_fds(p + own) : 0;
        if (::poll(p, own + relayed, -1) < 0) continue;
        if (sigfd >= 0 && (p[1].revents & POLLIN)) {
            signalfd_siginfo info{};
            while (::read(sigfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                // The pty's size changes, and the kernel tells the command (its controlling terminal).
                if (terminal && info.ssi_signo == SIGWINCH)
                    terminal->copy_window_size();
                else
                    send_request(fd, 'G', {{"signal", static_cast<int>(info.ssi_signo)}}, why);
            }
        }
        if (terminal) terminal->on_poll(p + own, relayed);
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        auto answer = receive_answer(fd);
        if (!answer) {
            terminal.reset();  // the user's terminal as it was before anything is said on it
            std::cerr << "cordon: session " << name << " ended before the command did\n";
            return 125;
        }
        if (answer->contains("exit")) {
            if (terminal) terminal->finish();
            return answer->value("exit", 125);
        }
        if (answer->contains("error")) {
            terminal.reset();
            std::cerr << "cordon: session " << name << ": " << answer->value("error", "") << "\n";
            return 125;
        }
    }
}

bool session_running(const std::string& name) {
    auto path = socket_path(name);
    if (!std::holds_alternative<fs::path>(path)) return false;
    auto fd = connect_to(std::get<fs::path>(path));
    if (!std::holds_alternative<int>(fd)) return false;
    ::close(std::get<int>(fd));
    return true;
}

int stop_session(const std::string& name) {
    const int fd = connect_session(name);
    if (fd < 0) return 1;
    std::string why;
    if (!send_request(fd, 'S', nlohmann::json::object(), why)) {
        std::cerr << "cordon: session " << name << ": " << why << "\n";
        return 1;
    }
    // Stopping takes as long as the jail's end; then the answer, or the end of the connection.
    timeval none{0, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    auto answer = receive_answer(fd);
    ::close(fd);
    if (answer && answer->contains("error")) {
        std::cerr << "cordon: session " << name << ": " << answer->value("error", "") << "\n";
        return 1;
    }
    return 0;
}

int list_sessions(bool json) {
    auto dir = session_directory();
    if (auto* why = std::get_if<std::string>(&dir)) {
        std::cerr << "cordon: " << *why << "\n";
        return 1;
    }
    nlohmann::json all = nlohmann::json::array();
    std::error_code ec;
    std::vector<fs::path> sockets;
    for (const auto& entry : fs::directory_iterator(std::get<fs::path>(dir), ec))
        if (entry.path().extension() == ".sock") sockets.push_back(entry.path());
    std::sort(sockets.begin(), sockets.end());
    for (const auto& path : sockets) {
        int err = 0;
        auto fd = connect_to(path, &err);
        if (!std::holds_alternative<int>(fd)) {
            // No session listens: a socket left by a machine that went down with /tmp not on tmpfs (a
            // supervisor's cleaner removes it otherwise).
            struct stat st {};
            if (err == ECONNREFUSED && ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode))
                ::unlink(path.c_str());
            continue;
        }
        const int s = std::get<int>(fd);
        timeval timeout{2, 0};
        ::setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
        std::optional<nlohmann::json> status;
        std::string why;
        if (send_request(s, 'L', nlohmann::json::object(), why)) status = receive_answer(s);
        ::close(s);
        if (status && status->contains("name")) all.push_back(*status);
    }
    if (json) {
        std::cout << all.dump(2) << "\n";
        return 0;
    }
    std::printf("%-24s %8s %8s %9s %10s %12s\n", "NAME", "PID", "AGE", "COMMANDS", "PROCESSES",
                "CONNECTIONS");
    for (const auto& s : all)
        std::printf("%-24s %8d %7llds %9lu %10zu %12zu\n", s.value("name", "").c_str(), s.value("pid", 0),
                    static_cast<long long>(s.value("age_seconds", 0LL)), s.value("commands", 0UL),
                    s.value("processes", std::size_t{0}), s.value("connections", std::size_t{0}));
    return 0;
}

}  // namespace cordon::run
