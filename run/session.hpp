// Sessions: one long-lived jail (its namespaces, proxy, notifier and init) that commands join. `cordon
// session start` runs the supervisor (run::run) in the background with a SessionHost; `cordon run --session
// NAME` (join_session) hands its command, environment, working directory and descriptors 0-2 (a terminal
// among them replaced by a pty of its own: terminal_relay.hpp) to it over the session's control socket, and
// the jail's init starts the command (jail/session_init.cpp).
//
// The control socket is `NAME.sock`, mode 0600, in the user's session directory (session_directory): a
// connection is served only when its peer (SO_PEERCRED) has the session's uid and is not a process of the
// jail itself. A request carries no policy: what a joining command may do is the session's.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

struct uv_loop_s;

namespace cordon::jail {
class Jail;
}
namespace cordon::proxy {
class Proxy;
}

namespace cordon::run {

// The user's session directory: `$XDG_RUNTIME_DIR/cordon`, else `/run/user/UID/cordon`, each when that
// runtime directory is the user's and not writable by others, else `/tmp/cordon-UID`; made mode 0700 and
// refused when it is not a directory owned by the user with no access for others (a symlink included). A
// message when none can be used.
std::variant<std::filesystem::path, std::string> session_directory();
// The directories of the sessions of `uids` that a jail must never write (policy::LoadOptions::session_dirs):
// each uid's registry's directory (/run/cordon, /tmp/cordon-UID), its session directories (/tmp/cordon-UID,
// /run/user/UID/cordon, and $XDG_RUNTIME_DIR/cordon of this process), and the directory of every socket its
// registry holds now (a session started with another XDG_RUNTIME_DIR). Nothing is made or required to exist.
std::vector<std::filesystem::path> session_state_directories(const std::vector<uid_t>& uids);
// A session name: 1-64 of [A-Za-z0-9._-], not starting with '.' or '-'. A message saying what is wrong.
std::optional<std::string> check_session_name(const std::string& name);

// The supervisor's side of a session.
class SessionHost {
  public:
    // Binds NAME.sock (a live session of that name is an error; a stale socket is replaced), registers it
    // (jail::host_rules::session_registry: no jail's notifier connects to it) before it listens, and forks
    // the cleaner: a process that removes the socket and the jail's cgroups when the supervisor is gone,
    // however it went (SIGKILL included). `ready_fd`: where "ready" is written once the session serves (then
    // stdio is /dev/null), -1 for none. Call while single-threaded.
    static std::variant<std::unique_ptr<SessionHost>, std::string> create(const std::string& name,
                                                                          std::optional<double> linger,
                                                                          int ready_fd);
    ~SessionHost();

    const std::filesystem::path& directory() const { return dir_; }

    // The jail and the proxy run: serve joins on `loop`. `network`: the jail has the proxy (the joining
    // commands' environment points at it).
    void attach(uv_loop_s* loop, jail::Jail* jail, proxy::Proxy* proxy, bool network);
    // The jail's report socket is readable: its events (Ready, Started, Exited). False when it is closed.
    bool on_jail_event();
    // The jail is gone (stopped, lingered out, or failed): clients told, the socket removed.
    void end();

  private:
    struct Client;
    SessionHost() = default;
    void accept_client();
    void read_client(Client& client);
    void close_client(int fd);
    void send(Client& client, const std::string& json);
    std::string status_json() const;
    void stop();
    void check_linger();

    std::string name_;
    std::filesystem::path dir_, socket_path_;
    std::filesystem::path registry_entry_;  // removed after the socket, by end() or the cleaner
    dev_t socket_dev_ = 0;
    ino_t socket_ino_ = 0;
    std::optional<double> linger_;
    int ready_fd_ = -1;
    int listen_fd_ = -1;
    int cleaner_fd_ = -1;  // the cleaner's pipe: it acts when the write end (ours) closes
    pid_t cleaner_pid_ = -1;
    uv_loop_s* loop_ = nullptr;
    jail::Jail* jail_ = nullptr;
    proxy::Proxy* proxy_ = nullptr;
    bool network_ = true;
    bool ready_ = false;
    bool stopping_ = false;
    std::string own_pid_ns_;   // the supervisor's /proc/PID/ns/pid: a client must be in it
    std::string jail_pid_ns_;  // the init's /proc/PID/ns/pid link: peers in it are the jail's own processes
    std::time_t started_ = 0;
    // Monotonic: --linger may be a fraction of a second, and a step of the wall clock must not end a session.
    std::chrono::steady_clock::time_point last_activity_{};
    unsigned long commands_ = 0;
    std::uint32_t next_id_ = 1;
    std::map<int, std::unique_ptr<Client>> clients_;  // by descriptor
    std::vector<int> stop_waiters_;                   // clients of `session stop`, answered by end()
    struct Handles;
    std::unique_ptr<Handles> handles_;
};

// The client's side. Each returns the process's exit status and says what went wrong on stderr.
// Runs `command` in the session: its status (the command's, 128+N), 125 when it could not be started.
int join_session(const std::string& name, const std::vector<std::string>& command);
// Whether a session of that name serves (its socket accepts a connection).
bool session_running(const std::string& name);
// Stops it: every process gone, its socket removed. 0, or 1 when there is no such session.
int stop_session(const std::string& name);
// Lists the user's sessions (a table, or a JSON array with --json).
int list_sessions(bool json);

}  // namespace cordon::run
