// `cordon claude-hook`: Claude Code's PreToolUse hook (agent/claude_hook.hpp decides), and its installer.
// Errors that must not let a command through (unreadable input, settings that do not load, an audit log that
// cannot be written) exit 2, which Claude Code treats as "block the tool call" and shows the message.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "agent/claude_hook.hpp"
#include "agent/settings_edit.hpp"
#include "agent/shell_split.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "policy/syntax.hpp"
#include "proxy/audit_log.hpp"

namespace cordon::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kHookHelp =
    "usage: cordon claude-hook [--auto-allow] [policy flags] [--audit-log FILE]   (Claude Code runs it)\n"
    "       cordon claude-hook --install [--local|--project|--user] [--auto-allow] [policy flags]\n"
    "                          [--audit-log FILE]\n"
    "       cordon claude-hook --uninstall [--local|--project|--user]\n"
    "\n"
    "Claude Code's PreToolUse hook for the Bash tool. Reads the hook input on stdin and answers with\n"
    "hookSpecificOutput: Bash(...) deny rules deny, ask rules ask, dangerouslyDisableSandbox asks (denies\n"
    "when sandbox.allowUnsandboxedCommands is false), sandbox.excludedCommands pass through unwrapped;\n"
    "every other command is rewritten to run under `cordon run` in the session's working directory, and\n"
    "allowed when every part is read-only or matches an allow rule, or with --auto-allow. Deny and ask\n"
    "rules see through wrappers (timeout, env, sudo, xargs, bash -c, ...) as Claude Code does. Compound\n"
    "commands are split and every part must pass; a command cordon cannot split is never auto-allowed. In a\n"
    "workspace Claude Code does not trust, the project's allow rules and --auto-allow do not apply.\n"
    "The settings are the policy engine's layers read from the session's working directory (managed\n"
    "settings first); the policy flags and --audit-log are passed on to the `cordon run` of each command.\n"
    "\n"
    "  --session              run the commands of one Claude Code session in one cordon session (cordon\n"
    "                         session start, started at the first command with the hook's flags, in its\n"
    "                         working directory): what a command leaves running in the background stays\n"
    "                         and the next command reaches it; Claude Code's SessionEnd event stops it\n"
    "                         (--install writes the SessionEnd entry too)\n"
    "  --linger SECONDS       (with --session) also end the session after SECONDS without a command\n"
    "  --auto-allow           allow every command that no deny or ask rule stops: it runs in cordon's\n"
    "                         jail (Claude Code's own sandbox must be off: sandbox.enabled false)\n"
    "  --audit-log FILE       append one `command` event per decision (and the jailed command's proxy\n"
    "                         lines, through `cordon run --audit-log FILE`)\n"
    "  --install              add the hook to a Claude Code settings file (default --local:\n"
    "                         .claude/settings.local.json; --project: .claude/settings.json; --user:\n"
    "                         ~/.claude/settings.json), keeping everything else in it as it is\n"
    "  --uninstall            remove exactly that entry\n"
    "  -h, --help             this text\n"
    "\n"
    "Exit status: 0 (the answer is on stdout), 2 when the input, the settings or the audit log fail (Claude\n"
    "Code then blocks the command and shows the message).\n"
    "\n";

std::string self_path() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("cordon") : self.string();
}

// A word as typed into a hook command: quoted only when it must be.
std::string word(const std::string& text) {
    bool plain = !text.empty() && text.find_first_not_of(
                                      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789_./:=@%+,-") == std::string::npos;
    return plain ? text : agent::shell_quote(text);
}

// The policy flags of `options` again (paths of settings files absolute), for `cordon run` and the
// installed hook command.
std::vector<std::string> policy_args(const policy::LoadOptions& options) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& file : options.settings_files)
        out.push_back("--settings=" + fs::absolute(file, ec).lexically_normal().string());
    if (options.managed_dir != policy::LoadOptions{}.managed_dir)
        out.push_back("--managed-dir=" + fs::absolute(options.managed_dir, ec).lexically_normal().string());
    if (!options.discover) out.push_back("--no-discover");
    auto each = [&](const std::vector<std::string>& values, const char* flag) {
        for (const auto& value : values)
            out.push_back(std::string(flag) + "=" + value);
    };
    each(options.allow_domains, "--allow-domain");
    each(options.deny_domains, "--deny-domain");
    each(options.allow_write, "--allow-write");
    each(options.deny_write, "--deny-write");
    each(options.allow_read, "--allow-read");
    each(options.deny_read, "--deny-read");
    each(options.allow_addresses, "--allow-address");
    return out;
}

bool append_audit(const std::string& path, const std::string& line, std::string& error) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0) {
        error = path + ": " + std::strerror(errno);
        return false;
    }
    // One write(2) per line, like the proxy's writer: concurrent hooks and jails append whole lines.
    ssize_t n = ::write(fd, line.data(), line.size());
    int saved = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(line.size())) {
        error = path + ": " + (n < 0 ? std::strerror(saved) : "short write");
        return false;
    }
    return true;
}

// Claude Code's global config, where it records which workspaces the user trusts.
std::string claude_json_text() {
    std::string path;
    if (const char* dir = std::getenv("CLAUDE_CONFIG_DIR"); dir && *dir)
        path = std::string(dir) + "/.claude.json";
    else if (const char* home = std::getenv("HOME"); home && *home)
        path = std::string(home) + "/.claude.json";
    if (path.empty()) return "";
    std::ifstream in(path, std::ios::binary);
    std::ostringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

struct SessionFlags {
    bool on = false;
    std::string linger;  // seconds, as given
};

// Runs `cordon ARGS` in `cwd` with stdout on /dev/null (the hook's stdout is its answer) and stderr the
// hook's; its exit status.
int run_self(const std::vector<std::string>& args, const std::string& cwd) {
    const std::string self = self_path();
    std::vector<char*> argv{const_cast<char*>(self.c_str())};
    for (const auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::cout.flush();
    const pid_t pid = ::fork();
    if (pid < 0) return 125;
    if (pid == 0) {
        if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(125);
        const int null = ::open("/dev/null", O_WRONLY);
        if (null >= 0) ::dup2(null, 1);
        ::execv(self.c_str(), argv.data());
        ::_exit(127);
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
}

int run_hook(const policy::LoadOptions& base, const std::string& audit_log, bool auto_allow,
             const SessionFlags& session) {
    std::string text;
    char buffer[65536];
    for (;;) {
        ssize_t n = ::read(0, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            std::cerr << "cordon claude-hook: cannot read stdin: " << std::strerror(errno) << "\n";
            return 2;
        }
        if (n == 0) break;
        text.append(buffer, static_cast<std::size_t>(n));
        if (text.size() > (16u << 20)) {
            std::cerr << "cordon claude-hook: the hook input is larger than 16 MiB\n";
            return 2;
        }
    }
    auto parsed = agent::parse_hook_input(text);
    if (auto* error = std::get_if<std::string>(&parsed)) {
        std::cerr << "cordon claude-hook: " << *error << "\n";
        return 2;
    }
    auto& input = std::get<agent::HookInput>(parsed);
    // Claude Code's session ends: so does its cordon session (none running: nothing to do).
    if (input.hook_event_name == "SessionEnd") {
        if (session.on && !input.session_id.empty()) {
            const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
            const int saved = ::dup(2);
            if (null >= 0) ::dup2(null, 2);
            run_self({"session", "stop", agent::session_name(input.session_id)}, "");
            if (saved >= 0) ::dup2(saved, 2);
        }
        return 0;
    }
    if (input.tool_name != "Bash") return 0;  // no opinion on other tools

    policy::LoadOptions load = base;
    if (!input.cwd.empty()) load.cwd = input.cwd;
    auto policy = load_policy_or_report(load);
    if (!policy) {
        std::cerr << "cordon claude-hook: the settings do not load; the command is blocked\n";
        return 2;
    }
    agent::Wrapper wrapper;
    wrapper.cordon = self_path();
    wrapper.args = policy_args(base);
    if (!audit_log.empty()) {
        std::error_code ec;
        wrapper.args.push_back("--audit-log=" +
                               (audit_log == "-" ? audit_log : fs::absolute(audit_log, ec).string()));
    }
    if (::access("/bin/bash", X_OK) != 0) wrapper.shell = "/bin/sh";
    if (session.on) {
        if (input.session_id.empty()) {
            std::cerr << "cordon claude-hook: --session: the hook input has no session_id; the command is "
                         "blocked\n";
            return 2;
        }
        wrapper.session = agent::session_name(input.session_id);
        wrapper.session_start = {"session", "start", "--reuse", "--name", wrapper.session};
        if (!session.linger.empty()) wrapper.session_start.push_back("--linger=" + session.linger);
        for (const auto& arg : wrapper.args)
            wrapper.session_start.push_back(arg);
    }
    agent::HookOptions options;
    options.auto_allow = auto_allow;
    options.trusted = agent::workspace_trusted(claude_json_text(), input.cwd);
    policy::CommandPolicy commands = policy->commands();
    if (!load.discover) {
        // Claude Code reads its hooks from the user, project and local settings whatever cordon's
        // --no-discover says, and another hook there can replace the wrapped command: look for those too.
        // Settings that do not load count as such a hook (the hook then asks).
        policy::LoadOptions discovered = load;
        discovered.discover = true;
        auto all = policy::load_policy(discovered);
        if (const auto* loaded = std::get_if<policy::PolicyPtr>(&all)) {
            for (const policy::Rule& hook : (*loaded)->commands().bash_hooks)
                commands.bash_hooks.push_back(hook);
        } else {
            commands.bash_hooks.push_back(
                policy::Rule{"(settings Claude Code reads that cordon cannot load)",
                             policy::Source{policy::Layer::Default, "", "hooks", 0}});
        }
    }
    agent::HookDecision decision = agent::decide(input, commands, wrapper, options);
    // The session the wrapped command joins: started at the first command that needs it, with the hook's
    // policy flags, in the Claude Code session's working directory (its writable project from then on).
    if (session.on && decision.wrapped && decision.permission != agent::HookDecision::Permission::Deny) {
        if (const int rc = run_self(wrapper.session_start, input.cwd); rc != 0) {
            std::cerr << "cordon claude-hook: cannot start cordon session " << wrapper.session
                      << "; the command is blocked\n";
            return 2;
        }
    }

    if (!audit_log.empty() && !input.command.empty()) {
        nlohmann::ordered_json event = {
            {"ts", proxy::rfc3339_ms(std::chrono::system_clock::now())},
            {"event", "command"},
            {"session_id", input.session_id},
            {"tool_use_id", input.tool_use_id},
            {"cwd", input.cwd},
            {"command", input.command},
            {"decision", std::string(agent::to_string(decision.permission))},
            {"rule", decision.rule ? decision.rule->text : ""},
            {"source", decision.rule ? policy::format_source(decision.rule->source) : ""},
            {"reason", decision.reason},
            {"wrapped", decision.wrapped}};
        std::string line =
            event.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
        std::string error;
        if (audit_log == "-") {
            std::cerr << line;
        } else if (!append_audit(audit_log, line, error)) {
            std::cerr << "cordon claude-hook: cannot write the audit log " << error
                      << "; the command is blocked\n";
            return 2;
        }
    }
    std::cout << agent::hook_output(input, decision);
    std::cout.flush();
    return 0;
}

// What stops the installed hook from working as meant, said at --install: Claude Code's own sandbox
// (sandbox.enabled) would run every command, cordon included, in its bubblewrap, where cordon cannot build
// its jail; another PreToolUse hook for Bash could replace the wrapped command with its updatedInput, so
// cordon asks about every command instead of allowing it.
void advise_after_install(const policy::LoadOptions& options) {
    policy::LoadOptions load = options;
    std::error_code ec;
    load.cwd = fs::current_path(ec);
    load.discover = true;  // what Claude Code reads, whatever cordon's own --no-discover says
    auto policy = policy::load_policy(load);
    const auto* loaded = std::get_if<policy::PolicyPtr>(&policy);
    if (!loaded) return;
    const policy::CommandPolicy& commands = (*loaded)->commands();
    if (commands.sandbox_enabled)
        std::cerr
            << "cordon claude-hook: sandbox.enabled is on in Claude Code's settings: Claude Code would run "
               "every command, cordon included, in its own bubblewrap sandbox, where cordon cannot build its "
               "jail and every command fails. Set \"sandbox\": {\"enabled\": false}: cordon's jail replaces "
               "it (its rules still apply), and use --auto-allow for what sandbox.enabled's auto-allow "
               "did.\n";
    if (const policy::Rule* other = agent::other_bash_hook(commands))
        std::cerr
            << "cordon claude-hook: warning: another PreToolUse hook for Bash, `" << other->text << "` ("
            << policy::format_source(other->source)
            << "), can replace cordon's wrapped command with its own updatedInput, and the command then "
               "runs outside cordon's jail; while it is there, cordon asks about every command instead "
               "of allowing it. Remove it, or make it part of one hook with cordon.\n";
}

// Replaces `target` with `text`, atomically: written to a new file of an unpredictable name in the same
// directory and renamed over it, so a crash leaves the old file or the new one. Why not a fixed temporary
// name: a jailed command can write the project directory, and a symlink it planted at a predictable name
// would make the user's next --install/--uninstall write through it (over ~/.bashrc, say). mkostemp's
// O_CREAT|O_EXCL does not follow a symlink. The new file gets the old one's owner and mode (a new settings
// file: 0666 less the umask, as any editor would make it).
bool replace_file(const fs::path& target, const std::string& text, const struct stat* old) {
    std::string pattern =
        (target.parent_path() / ("." + target.filename().string() + ".cordon-XXXXXX")).string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0) {
        std::cerr << "cordon claude-hook: cannot create a file in " << target.parent_path().string() << ": "
                  << std::strerror(errno) << "\n";
        return false;
    }
    std::string temp(name.data());
    auto fail = [&](const char* what) {
        std::cerr << "cordon claude-hook: cannot " << what << " " << temp << ": " << std::strerror(errno)
                  << "\n";
        ::close(fd);
        ::unlink(temp.c_str());
        return false;
    };
    std::size_t done = 0;
    while (done < text.size()) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail("write");
        done += static_cast<std::size_t>(n);
    }
    mode_t mode;
    if (old) {
        mode = old->st_mode & 07777;
        if (::fchown(fd, old->st_uid, old->st_gid) != 0 && (old->st_uid != ::geteuid() || errno != EPERM))
            return fail("set the owner of");
    } else {
        mode_t mask = ::umask(0);
        ::umask(mask);
        mode = 0666 & ~mask;
    }
    if (::fchmod(fd, mode) != 0) return fail("set the mode of");
    if (::fsync(fd) != 0) return fail("sync");
    if (::close(fd) != 0) {
        fd = -1;
        ::unlink(temp.c_str());
        return false;
    }
    if (::rename(temp.c_str(), target.c_str()) != 0) {
        std::cerr << "cordon claude-hook: cannot replace " << target.string() << ": " << std::strerror(errno)
                  << "\n";
        ::unlink(temp.c_str());
        return false;
    }
    return true;
}

int edit_settings(bool install, const std::string& scope, const policy::LoadOptions& options,
                  const std::string& audit_log, bool auto_allow, const SessionFlags& session) {
    std::error_code ec;
    fs::path file;
    if (scope == "--user") {
        const char* home = std::getenv("HOME");
        if (!home || home[0] != '/') throw UsageError("--user needs $HOME");
        file = fs::path(home) / ".claude" / "settings.json";
    } else {
        file = fs::current_path(ec) / ".claude" /
               (scope == "--project" ? "settings.json" : "settings.local.json");
    }
    // A settings file that is a symlink (a dotfiles repository, say) is edited where it points, so the link
    // stays a link.
    struct stat st {};
    bool exists = ::stat(file.c_str(), &st) == 0;
    if (exists) {
        fs::path target = fs::canonical(file, ec);
        if (ec) {
            std::cerr << "cordon claude-hook: cannot resolve " << file.string() << ": " << ec.message()
                      << "\n";
            return 2;
        }
        file = target;
        if (!S_ISREG(st.st_mode)) {
            std::cerr << "cordon claude-hook: " << file.string() << " is not a regular file; not changed\n";
            return 2;
        }
    }
    std::string text;
    if (exists) {
        std::ifstream in(file, std::ios::binary);
        if (!in) {
            std::cerr << "cordon claude-hook: cannot read " << file.string() << ": " << std::strerror(errno)
                      << "\n";
            return 2;
        }
        std::ostringstream buffer;
        buffer << in.rdbuf();
        text = buffer.str();
    } else if (!install) {
        std::cerr << "cordon claude-hook: " << file.string() << " does not exist; nothing to remove\n";
        return 0;
    }
    std::string command = word(self_path()) + " claude-hook";
    for (const auto& arg : policy_args(options))
        command += " " + word(arg);
    if (!audit_log.empty()) command += " " + word("--audit-log=" + fs::absolute(audit_log, ec).string());
    if (auto_allow) command += " --auto-allow";
    if (session.on) command += " --session";
    if (!session.linger.empty()) command += " " + word("--linger=" + session.linger);
    agent::SettingsEdit edit = install ? agent::install_hook(text, command) : agent::uninstall_hook(text);
    // With --session, SessionEnd runs the hook too (it stops the session); uninstall removes either entry.
    if (edit.error.empty() && (session.on || !install)) {
        agent::SettingsEdit end = install ? agent::install_hook(edit.text, command, "SessionEnd")
                                          : agent::uninstall_hook(edit.text, "SessionEnd");
        if (!end.error.empty()) edit.error = end.error;
        if (end.changed) {
            edit.text = std::move(end.text);
            edit.changed = true;
        }
    }
    if (!edit.error.empty()) {
        std::cerr << "cordon claude-hook: " << file.string() << ": " << edit.error << "; not changed\n";
        return 2;
    }
    if (!edit.changed) {
        std::cerr << "cordon claude-hook: " << file.string() << ": "
                  << (install ? "already installed" : "no cordon hook to remove") << "\n";
    } else {
        fs::create_directories(file.parent_path(), ec);
        if (!replace_file(file, edit.text, exists ? &st : nullptr)) return 2;
        std::cerr << "cordon claude-hook: " << (install ? "installed in " : "removed from ") << file.string()
                  << "\n";
    }
    if (install) advise_after_install(options);
    return 0;
}

}  // namespace

int cmd_claude_hook(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    policy::LoadOptions load;
    std::string audit_log, scope;
    bool install = false, uninstall = false, auto_allow = false;
    SessionFlags session;
    while (!args.done()) {
        if (args.flag("--help") || args.flag("-h")) {
            std::cout << kHookHelp << kPolicyFlagsHelp;
            return 0;
        }
        if (parse_policy_flag(args, load)) continue;
        if (args.flag("--audit-log")) {
            audit_log = args.value();
        } else if (args.flag("--auto-allow")) {
            auto_allow = true;
        } else if (args.flag("--session")) {
            session.on = true;
        } else if (args.flag("--linger")) {
            session.linger = args.value();
            char* end = nullptr;
            const double t = std::strtod(session.linger.c_str(), &end);
            if (session.linger.empty() || *end != '\0' || !(t > 0))
                throw UsageError("--linger needs a positive number of seconds, not '" + session.linger + "'");
        } else if (args.flag("--install")) {
            install = true;
        } else if (args.flag("--uninstall")) {
            uninstall = true;
        } else if (args.peek() == "--project" || args.peek() == "--local" || args.peek() == "--user") {
            if (!scope.empty()) throw UsageError("one of --local, --project, --user");
            scope = args.next();
        } else {
            throw UsageError("unknown argument '" + args.peek() + "'");
        }
    }
    if (install && uninstall) throw UsageError("--install and --uninstall contradict each other");
    if (!session.linger.empty() && !session.on) throw UsageError("--linger goes with --session");
    if (!scope.empty() && !install && !uninstall)
        throw UsageError(scope + " goes with --install or --uninstall");
    if (install || uninstall)
        return edit_settings(install, scope.empty() ? "--local" : scope, load, audit_log, auto_allow,
                             session);
    return run_hook(load, audit_log, auto_allow, session);
}

}  // namespace cordon::cli
