// The flags that concern the proxy's upstream side, shared by `cordon proxy` and `cordon run` (so what is
// tested with the standalone proxy can be tested inside a jail the same way). --allow-address is a policy
// flag.
#pragma once

#include "cli/args.hpp"
#include "proxy/proxy.hpp"

namespace cordon::cli {

// Consumes one of --dns-server, --audit-log, --connect-timeout, --idle-timeout, --header-timeout,
// --max-connections into `options`. Returns false when the current argument is none of them; UsageError on a
// bad value.
bool parse_proxy_flag(ArgCursor& args, proxy::Options& options);

extern const char* const kProxyFlagsHelp;

// The proxy's policy rebuild for control-channel updates (proxy::Options::reload): `load` with the update
// as its Control layer. `latest` (optional) keeps the last layer that loaded, for a SIGHUP reload to keep.
std::function<std::variant<policy::PolicyPtr, std::string>(const std::string&)> control_reload(
    policy::LoadOptions load, std::shared_ptr<std::string> latest = nullptr);

// Parses a duration in seconds ("10", "0.5"); UsageError naming `flag` when malformed.
std::chrono::milliseconds parse_seconds(const std::string& flag, const std::string& value);

}  // namespace cordon::cli
