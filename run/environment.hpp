// The environment of the jailed command: where the proxy is, as programs inside the jail look for it.
#pragma once

#include <string>
#include <vector>

namespace cordon::run {

// The caller's environment `caller_env` (NULL-terminated) with the proxy variables (HTTP_PROXY & co,
// ALL_PROXY, NO_PROXY) pointing at the jail's listeners (removed without network), and SANDBOX_RUNTIME=1.
std::vector<std::string> jail_environment(char** caller_env, bool network);

}  // namespace cordon::run
