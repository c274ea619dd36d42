// The Seatbelt launch (see launcher.hpp).
#include "seatbelt/launcher.hpp"

#include <set>
#include <string_view>

namespace cordon::seatbelt {

Launch plan_launch(const std::string& profile, const std::vector<std::string>& command, char** caller_env,
                   const std::vector<std::pair<std::string, std::string>>& variables,
                   const std::string& temp_dir) {
    Launch out;
    out.argv = {kSandboxExec, "-p", profile};
    out.argv.insert(out.argv.end(), command.begin(), command.end());
    std::set<std::string, std::less<>> replaced{"SANDBOX_RUNTIME", "TMPDIR"};
    for (const auto& [name, value] : variables)
        replaced.insert(name);
    for (char** e = caller_env; e != nullptr && *e != nullptr; ++e) {
        const std::string_view entry(*e);
        if (!replaced.contains(entry.substr(0, entry.find('=')))) out.env.emplace_back(entry);
    }
    for (const auto& [name, value] : variables)
        out.env.push_back(name + "=" + value);
    out.env.emplace_back("SANDBOX_RUNTIME=1");
    if (!temp_dir.empty()) out.env.push_back("TMPDIR=" + temp_dir);
    return out;
}

}  // namespace cordon::seatbelt
