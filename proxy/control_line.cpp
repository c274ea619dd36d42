#include "proxy/control_line.hpp"

namespace cordon::proxy {

using json = nlohmann::json;

namespace {

ControlMessage answer(const json& body) {
    if (!body.is_object())
        return ControlError{"answer: expected an object {\"id\", \"decision\", \"remember\"}"};
    ControlAnswer a;
    for (auto it = body.begin(); it != body.end(); ++it)
        if (it.key() != "id" && it.key() != "decision" && it.key() != "remember")
            return ControlError{"answer: unknown key \"" + it.key() + "\""};
    auto id = body.find("id");
    if (id == body.end() || !id->is_number_unsigned())
        return ControlError{"answer: id must be the ask's number"};
    a.id = id->get<std::uint64_t>();
    auto decision = body.find("decision");
    if (decision == body.end() || !decision->is_string() || (*decision != "allow" && *decision != "deny"))
        return ControlError{"answer: decision must be \"allow\" or \"deny\""};
    a.allow = *decision == "allow";
    if (auto remember = body.find("remember"); remember != body.end()) {
        if (!remember->is_boolean()) return ControlError{"answer: remember must be true or false"};
        a.remember = remember->get<bool>();
    }
    return a;
}

}  // namespace

ControlMessage parse_control_line(std::string_view line) {
    json root = json::parse(line, nullptr, false);
    if (root.is_discarded()) return ControlError{"not a JSON line"};
    if (!root.is_object()) return ControlError{"expected a JSON object"};
    if (root.contains("answer")) {
        if (root.size() != 1) return ControlError{"an answer line holds only \"answer\""};
        return answer(root["answer"]);
    }
    if (root.empty()) return ControlError{"an empty update"};
    bool srt = root.contains("network") || root.contains("filesystem");
    bool claude = root.contains("sandbox") || root.contains("permissions");
    if (srt && claude)
        return ControlError{
            "an update is either srt's shape (network, filesystem) or Claude Code's (sandbox, "
            "permissions), not both"};
    ControlUpdate update;
    for (auto it = root.begin(); it != root.end(); ++it) {
        const std::string& key = it.key();
        if (key != "network" && key != "filesystem" && key != "sandbox" && key != "permissions")
            return ControlError{"unknown key \"" + key +
                                "\" (an update holds network/filesystem or "
                                "sandbox/permissions)"};
        if (!it->is_object()) return ControlError{"\"" + key + "\" must be an object"};
    }
    if (srt) {
        update.settings = json{{"sandbox", root}};
        update.filesystem = root.contains("filesystem");
    } else {
        update.settings = std::move(root);
        const json* sandbox = update.settings.contains("sandbox") ? &update.settings["sandbox"] : nullptr;
        update.filesystem = sandbox && sandbox->contains("filesystem");
        if (auto p = update.settings.find("permissions"); p != update.settings.end())
            for (const char* list : {"allow", "deny", "ask"})
                if (auto rules = p->find(list); rules != p->end() && rules->is_array())
                    for (const auto& rule : *rules)
                        if (rule.is_string() && (rule.get<std::string>().rfind("Read(", 0) == 0 ||
                                                 rule.get<std::string>().rfind("Edit(", 0) == 0))
                            update.filesystem = true;
    }
    return update;
}

}  // namespace cordon::proxy
