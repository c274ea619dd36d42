// The `cordon` commands. Each takes the arguments after its name and returns the process exit status.
#pragma once

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

}  // namespace cordon::cli
