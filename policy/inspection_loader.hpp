// Reads the inspection keys of one settings file (sandbox.network.inspect / tlsTerminate / requestRules /
// parentProxy, and credentials) into an InspectionPolicy. Internal to the policy module; settings_loader.cpp
// calls it with its own error conventions (fail throws, warn collects).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "policy/inspection.hpp"

namespace cordon::policy::detail {

struct InspectionContext {
    std::function<Source(const std::string& where)> source;
    std::function<void(const std::string& where, const std::string& why)> fail;  // throws
    std::function<void(const std::string& where, const std::string& why)> warn;
    // Adds a path to denyRead (credentials.files in deny mode).
    std::function<void(std::string text, const std::string& where)> deny_read;
};

// `key` is one of kInspectionNetworkKeys (under network) or "credentials"; `where` its JSON path.
void load_inspection_key(const nlohmann::json& value, const std::string& key, const std::string& where,
                         InspectionPolicy& out, const InspectionContext& context);

// A --inspect flag's pattern; an error message, or empty.
std::string add_inspect_flag(const std::string& text, InspectionPolicy& out);

}  // namespace cordon::policy::detail
