// The `cordon` commands. Each takes the arguments after its name and returns the process exit status.
#pragma once

#include <functional>
#include <optional>

namespace cordon::run {
struct Options;
}

namespace cordon::cli {

int cmd_ca(int argc, char** argv);
int cmd_check(int argc, char** argv);  // argv[0] is the first argument after "check"
int cmd_claude_hook(int argc, char** argv);
int cmd_connect(int argc, char** argv);
int cmd_doctor(int argc, char** argv);
int cmd_policy(int argc, char** argv);
int cmd_policy_suggest(int argc, char** argv);  // argv[0] is the first argument after "policy suggest"
int cmd_proxy(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_session(int argc, char** argv);  // start | stop | list (cmd_session.cpp)

// `cordon run`'s flags parsed into run::Options, then `launch` instead of run::run: `cordon session start`
// (no command; its launch starts the session in the background).
using RunLauncher = std::function<int(run::Options&)>;
int run_with_flags(int argc, char** argv, const RunLauncher& launch);
// `cordon run --session NAME ...`: the command joins the session (cmd_session.cpp); nullopt without
// --session.
std::optional<int> run_in_session(int argc, char** argv);

}  // namespace cordon::cli
