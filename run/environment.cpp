// The jail's environment (see environment.hpp).
#include "run/environment.hpp"

#include <cstdlib>
#include <filesystem>

namespace cordon::run {

namespace {

const std::string kSandboxRuntime = "SANDBOX_RUNTIME";

}  // namespace

std::vector<std::uint16_t> proxy_ports() {
    return {kHttpProxyPort, kSocksProxyPort};
}

std::vector<std::pair<std::string, std::string>> proxy_variables() {
    return proxy_variables(kHttpProxyPort, kSocksProxyPort);
}

std::vector<std::pair<std::string, std::string>> proxy_variables(std::uint16_t http_port,
                                                                 std::uint16_t socks_port_number) {
    const std::string port = std::to_string(http_port), socks_port = std::to_string(socks_port_number);
    const std::string http = "http://127.0.0.1:" + port;
    const std::string socks = "socks5h://127.0.0.1:" + socks_port;
    const std::string no_proxy = "localhost,127.0.0.1,::1";
    // `ssh -o ProxyCommand=...` through `cordon connect`: this binary, which the jail sees at the same path.
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const std::string self = ec ? std::string("cordon") : exe.string();
    auto quoted = [](const std::string& text) {
        std::string out = "'";
        for (char c : text)
            out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return out + "'";
    };
    // No connection sharing: a host ssh master (ControlMaster) reachable through an allowed Unix socket would
    // carry the jail's connections to wherever that master is connected, past the proxy.
    const std::string proxy_command =
        "-o ControlMaster=no -o ControlPath=none -o ProxyCommand=" +
        quoted(quoted(self) + " connect " +
               (socks_port_number == kSocksProxyPort ? "" : "--proxy 127.0.0.1:" + socks_port + " ") +
               "%h %p");
    const char* user_ssh = std::getenv("GIT_SSH_COMMAND");
    const char* user_java = std::getenv("JAVA_TOOL_OPTIONS");
    const std::string java = "-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=" + port +
                             " -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=" + port +
                             " -DsocksProxyHost=127.0.0.1 -DsocksProxyPort=" + socks_port +
                             " -Dhttp.nonProxyHosts=localhost|127.0.0.1|[::1]";
    return {
        {"HTTP_PROXY", http},
        {"HTTPS_PROXY", http},
        {"http_proxy", http},
        {"https_proxy", http},
        {"GRPC_PROXY", http},
        {"grpc_proxy", http},
        {"FTP_PROXY", http},
        {"ftp_proxy", http},
        {"ALL_PROXY", socks},
        {"all_proxy", socks},
        {"NO_PROXY", no_proxy},
        {"no_proxy", no_proxy},
        {"RSYNC_PROXY", "127.0.0.1:" + port},  // rsync's daemon protocol through HTTP CONNECT
        {"DOCKER_HTTP_PROXY", http},
        {"DOCKER_HTTPS_PROXY", http},
        {"CLOUDSDK_PROXY_TYPE", "http"},
        {"CLOUDSDK_PROXY_ADDRESS", "127.0.0.1"},
        {"CLOUDSDK_PROXY_PORT", port},
        // Java reads no *_PROXY variable; the JVM picks these up at start. The caller's own options stay
        // first (the later -D of the same property wins).
        {"JAVA_TOOL_OPTIONS",
         user_java != nullptr && *user_java != '\0' ? std::string(user_java) + " " + java : java},
        // git over ssh: the caller's ssh command (keys, options) keeps working, routed through the proxy.
        {"GIT_SSH_COMMAND",
         (user_ssh != nullptr && *user_ssh != '\0' ? std::string(user_ssh) : std::string("ssh")) + " " +
             proxy_command},
    };
}

std::vector<std::pair<std::string, std::string>> trust_variables(const std::string& bundle) {
    return {
        {"SSL_CERT_FILE", bundle},        // OpenSSL (curl, wget, Python's ssl, Ruby, ...)
        {"NODE_EXTRA_CA_CERTS", bundle},  // Node adds these to its own list
        {"REQUESTS_CA_BUNDLE", bundle},   // Python requests (certifi otherwise)
        {"CURL_CA_BUNDLE", bundle},      {"GIT_SSL_CAINFO", bundle},
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
    std::string long_values;
    for (const auto& [name, value] : proxy_variables()) {
        if (value.size() > 40) {  // JAVA_TOOL_OPTIONS, GIT_SSH_COMMAND: named, not spelt out
            long_values += (long_values.empty() ? "" : ", ") + name;
            continue;
        }
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
    if (!long_values.empty()) out += long_values + " (pointing Java and ssh at the proxy),\n";
    return out + kSandboxRuntime + "=1.\n";
}

}  // namespace cordon::run
