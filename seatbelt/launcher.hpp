// `cordon run` on macOS: the command under `sandbox-exec -p PROFILE`, its environment pointing at cordon's
// proxy on the host's loopback. What to run is computed here on every platform (and unit-tested on Linux);
// only starting it is macOS's (cli/cmd_run_seatbelt.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cordon::seatbelt {

// Where macOS keeps sandbox-exec.
constexpr const char* kSandboxExec = "/usr/bin/sandbox-exec";

struct Launch {
    std::vector<std::string> argv;  // sandbox-exec -p PROFILE COMMAND ARGS...
    std::vector<std::string> env;   // NAME=VALUE
};

// The launch of `command` under `profile`: the caller's environment `caller_env` (NULL-terminated) without
// the names `variables` set, SANDBOX_RUNTIME and TMPDIR, then `variables` (the proxy's), SANDBOX_RUNTIME=1
// and TMPDIR=`temp_dir` (the command's private temporary directory; none when empty).
Launch plan_launch(const std::string& profile, const std::vector<std::string>& command, char** caller_env,
                   const std::vector<std::pair<std::string, std::string>>& variables,
                   const std::string& temp_dir);

}  // namespace cordon::seatbelt
