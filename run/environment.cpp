// The jail's environment (see environment.hpp).
#include "run/environment.hpp"

namespace cordon::run {

namespace {

const std::string kSandboxRuntime = "SANDBOX_RUNTIME";

}  // namespace

std::vector<std::uint16_t> proxy_ports() {
    return {kHttpProxyPort, kSocksProxyPort};
}

std::vector<std::pair<std::string, std::string>> proxy_variables() {
    const std::string http = "http://127.0.0.1:" + std::to_string(kHttpProxyPort);
    const std::string socks = "socks5h://127.0.0.1:" + std::to_string(kSocksProxyPort);
    const std::string no_proxy = "localhost,127.0.0.1,::1";
    return {
        {"HTTP_PROXY", http},   {"HTTPS_PROXY", http},  {"http_proxy", http}, {"https_proxy", http},
        {"GRPC_PROXY", http},   {"grpc_proxy", http},   {"ALL_PROXY", socks}, {"all_proxy", socks},
        {"NO_PROXY", no_proxy}, {"no_proxy", no_proxy},
    };
}

std::vector<std::string> jail_environment(char** caller_env, bool network) {
    const auto variables = proxy_variables();
    auto overridden = [&](const std::string& entry) {
        std::string name = entry.substr(0, entry.find('='));
        if (name == kSandboxRuntime) return true;
        for (const auto& v : variables)
            if (name == v.first) return true;
        return false;
    };
    std::vector<std::string> env;
    for (char** e = caller_env; *e; ++e)
        if (!overridden(*e)) env.emplace_back(*e);
    if (network)
        for (const auto& [name, value] : variables)
            env.push_back(name + "=" + value);
    env.push_back(kSandboxRuntime + "=1");
    return env;
}

std::string environment_help() {
    // Grouped by value: "HTTP_PROXY/HTTPS_PROXY/... = http://127.0.0.1:3128".
    std::vector<std::pair<std::string, std::string>> groups;  // value -> names
    for (const auto& [name, value] : proxy_variables()) {
        auto it = groups.begin();
        while (it != groups.end() && it->first != value)
            ++it;
        if (it == groups.end())
            groups.push_back({value, name});
        else
            it->second += "/" + name;
    }
    std::string out = "Inside, ";
    for (const auto& [value, names] : groups)
        out += names + " = " + value + ",\n";
    return out + kSandboxRuntime + "=1.\n";
}

}  // namespace cordon::run
