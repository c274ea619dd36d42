// The jail's environment (see environment.hpp).
#include "run/environment.hpp"

namespace cordon::run {

std::vector<std::string> jail_environment(char** caller_env, bool network) {
    std::vector<std::string> env;
    auto overridden = [&](const std::string& entry) {
        static const char* const kNames[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",     "https_proxy",
                                             "ALL_PROXY",  "all_proxy",   "GRPC_PROXY",     "grpc_proxy",
                                             "NO_PROXY",   "no_proxy",    "SANDBOX_RUNTIME"};
        std::string name = entry.substr(0, entry.find('='));
        for (const char* n : kNames)
            if (name == n) return true;
        return false;
    };
    for (char** e = caller_env; *e; ++e)
        if (!overridden(*e)) env.emplace_back(*e);
    if (network) {
        const std::string http = "http://127.0.0.1:3128", socks = "socks5h://127.0.0.1:1080";
        for (const char* n :
             {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "GRPC_PROXY", "grpc_proxy"})
            env.push_back(std::string(n) + "=" + http);
        env.push_back("ALL_PROXY=" + socks);
        env.push_back("all_proxy=" + socks);
        env.push_back("NO_PROXY=localhost,127.0.0.1,::1");
        env.push_back("no_proxy=localhost,127.0.0.1,::1");
    }
    env.push_back("SANDBOX_RUNTIME=1");
    return env;
}

}  // namespace cordon::run
