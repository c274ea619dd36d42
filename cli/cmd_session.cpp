// `cordon session start|stop|list` and `cordon run --session NAME`: their flags. Sessions themselves are
// run/session.hpp.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "run/run.hpp"
#include "run/session.hpp"

namespace cordon::cli {

namespace {

constexpr const char* kSessionHelp =
    "usage: cordon session start [--name NAME] [--linger SECONDS] [run flags...]\n"
    "       cordon session stop NAME\n"
    "       cordon session list [--json]\n"
    "       cordon run --session NAME -- CMD [ARGS...]   (or -c 'shell string')\n"
    "\n"
    "A session is one long-lived jail (its namespaces, proxy, notifier and init) that commands join: what a\n"
    "command leaves running in the background (a dev server, a database) stays, and the next command "
    "reaches\n"
    "it on the jail's loopback. `start` sets the jail up with the flags of `cordon run` (policy, --user,\n"
    "--memory, --audit-log, --control-fd, ...), prints the session's name and returns; the session runs in\n"
    "the background until `stop`, until it has had no command and no connection for --linger SECONDS, or\n"
    "until its supervisor ends (SIGTERM). A joining command gets the caller's working directory,\n"
    "environment (with the session's proxy variables), stdin, stdout, stderr and relayed signals; `cordon\n"
    "run --session` exits with its status. A terminal among them is not handed over: the command gets a pty\n"
    "of the client's (its controlling terminal: ^C, resizes), relayed while it runs and closed when it "
    "ends,\n"
    "so that nothing it leaves running reads what is typed afterwards. A client that goes away takes its\n"
    "command with it (SIGKILL), not what the command started in the background.\n"
    "\n"
    "The filesystem rules are fixed when the session starts; the network policy can change live through\n"
    "--control-fd or --watch, as for `cordon run`. A joining command cannot ask for more: `cordon run\n"
    "--session` refuses every policy or jail flag, naming it.\n"
    "\n"
    "A session belongs to its user: its control socket NAME.sock (mode 0600) is in $XDG_RUNTIME_DIR/cordon,\n"
    "else /run/user/UID/cordon (each when that directory is the user's, not writable by others), else\n"
    "/tmp/cordon-UID (mode 0700), and the session serves only peers of its uid that are not inside its own\n"
    "jail. `list` shows name, pid, age, commands run, live processes and open connections (the proxy's,\n"
    "host ports' and published ports').\n"
    "\n"
    "  --name NAME        1-64 of A-Z a-z 0-9 . _ - (default: s-RANDOM)\n"
    "  --reuse            a session of that name already running is fine: print its name, start none\n"
    "  --linger SECONDS   end the session after SECONDS with no command, no client and no connection\n"
    "  --json             (list) a JSON array of {name, pid, age_seconds, commands, running, processes,\n"
    "                     connections}\n";

std::string random_name() {
    std::random_device rd;
    char buf[16];
    std::snprintf(buf, sizeof buf, "s-%06x", rd() & 0xffffffU);
    return buf;
}

double parse_linger(const std::string& v) {
    char* end = nullptr;
    double t = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(t > 0) || !std::isfinite(t))
        throw UsageError("--linger needs a positive number of seconds, not '" + v + "'");
    return t;
}

// Starts the supervisor in the background: the session runs in a child that leaves the caller's process
// group; this process waits for its word and prints the name.
int start(int argc, char** argv) {
    std::optional<std::string> name;  // --name "" is refused, not a random name
    std::optional<double> linger;
    bool reuse = false;
    std::vector<char*> rest;
    for (int i = 0; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&](const std::string& flag) -> std::string {
            if (a.size() > flag.size() && a[flag.size()] == '=') return a.substr(flag.size() + 1);
            if (i + 1 >= argc) throw UsageError(flag + " needs a value");
            return argv[++i];
        };
        if (a == "--name" || a.rfind("--name=", 0) == 0)
            name = value("--name");
        else if (a == "--linger" || a.rfind("--linger=", 0) == 0)
            linger = parse_linger(value("--linger"));
        else if (a == "--reuse")
            reuse = true;
        else if (a == "--help" || a == "-h") {
            std::cout << kSessionHelp;
            return 0;
        } else
            rest.push_back(argv[i]);
    }
    if (!name) name = random_name();
    if (auto why = run::check_session_name(*name)) throw UsageError(*why);
    if (reuse && run::session_running(*name)) {
        std::cout << *name << "\n";
        return 0;
    }
    rest.push_back(nullptr);
    return run_with_flags(static_cast<int>(rest.size()) - 1, rest.data(), [&](run::Options& options) {
        int ready[2];
        if (::pipe2(ready, O_CLOEXEC) != 0) {
            std::cerr << "cordon: pipe: " << std::strerror(errno) << "\n";
            return 125;
        }
        std::cout.flush();
        std::cerr.flush();
        const pid_t child = ::fork();
        if (child < 0) {
            std::cerr << "cordon: fork: " << std::strerror(errno) << "\n";
            return 125;
        }
        if (child == 0) {
            ::close(ready[0]);
            // Not in the caller's process group or session: the terminal's ^C or hang-up is not the
            // session's end.
            ::setsid();
            auto host = run::SessionHost::create(*name, linger, ready[1]);
            if (auto* why = std::get_if<std::string>(&host)) {
                std::cerr << "cordon: " << *why << "\n";
                ::_exit(125);
            }
            options.session = std::move(std::get<std::unique_ptr<run::SessionHost>>(host));
            options.quiet = true;  // nobody reads the end-of-run summary
            ::_exit(run::run(options));
        }
        ::close(ready[1]);
        char buf[8] = {};
        ssize_t n;
        while ((n = ::read(ready[0], buf, sizeof buf)) < 0 && errno == EINTR) {
        }
        ::close(ready[0]);
        if (n > 0 && std::string(buf, static_cast<std::size_t>(n)).rfind("ready", 0) == 0) {
            std::cout << *name << "\n";
            return 0;
        }
        int status = 0;
        while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 125;
        std::cerr << "cordon: session " << *name << " could not be started\n";
        return code == 0 ? 125 : code;
    });
}

}  // namespace

int cmd_session(int argc, char** argv) {
    if (argc < 1) throw UsageError("start, stop or list?");
    const std::string what = argv[0];
    if (what == "--help" || what == "-h") {
        std::cout << kSessionHelp;
        return 0;
    }
    if (what == "start") return start(argc - 1, argv + 1);
    if (what == "stop") {
        if (argc != 2) throw UsageError("stop takes one session name");
        return run::stop_session(argv[1]);
    }
    if (what == "list") {
        bool json = false;
        for (int i = 1; i < argc; ++i) {
            if (std::string(argv[i]) == "--json")
                json = true;
            else
                throw UsageError("list takes only --json, not '" + std::string(argv[i]) + "'");
        }
        return run::list_sessions(json);
    }
    throw UsageError("unknown session command '" + what + "' (start, stop or list)");
}

std::optional<int> run_in_session(int argc, char** argv) {
    std::optional<std::string> name;
    for (int i = 0; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--" || a == "-c") break;
        if (a == "--session" && i + 1 < argc) name = argv[i + 1];
        if (a.rfind("--session=", 0) == 0) name = a.substr(10);
        if (a == "--session" && i + 1 >= argc) throw UsageError("--session needs a session name");
    }
    if (!name) return std::nullopt;
    // The command and nothing else: a joining command runs under the session's policy and jail, fixed when
    // it started; a flag here could only ask for more (or for something else), and is refused by name.
    std::vector<std::string> command, refused;
    ArgCursor args(argc, argv, 0);
    while (!args.done()) {
        if (args.peek() == "--") {
            args.next();
            command = args.rest();
            break;
        }
        if (args.flag("--session")) {
            args.value();
        } else if (args.flag("-c")) {
            command = {"/bin/sh", "-c", args.value()};
            if (!args.done()) throw UsageError("-c takes one shell string; nothing may follow it");
        } else if (args.flag("--quiet")) {
            // A session prints no end-of-run summary anyway.
        } else if (args.peek().size() > 1 && args.peek()[0] == '-') {
            std::string flag = args.next();
            refused.push_back(flag.substr(0, flag.find('=')));
        } else {
            command = args.rest();
        }
    }
    if (!refused.empty()) {
        std::string names;
        for (const auto& f : refused)
            names += (names.empty() ? "" : ", ") + f;
        throw UsageError(names + ": a command joining session " + *name +
                         " runs under the session's policy and jail, fixed when it started (give such flags "
                         "to `cordon session start`); `cordon run --session NAME` takes only -c or -- CMD");
    }
    if (command.empty()) throw UsageError("no command given (cordon run --session NAME -- CMD or -c STRING)");
    if (auto why = run::check_session_name(*name)) throw UsageError(*why);
    return run::join_session(*name, command);
}

}  // namespace cordon::cli
