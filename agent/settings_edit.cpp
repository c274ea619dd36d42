#include "agent/settings_edit.hpp"

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace cordon::agent {

namespace {

using ordered = nlohmann::ordered_json;

// Positions inside JSON text that nlohmann has already accepted: each value's [begin, end).
struct Item {
    std::string key;        // objects only
    std::size_t begin = 0;  // the key's opening quote (objects) or the value's first byte (arrays)
    std::size_t value_begin = 0, value_end = 0;
};

bool ws(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::size_t skip_ws(std::string_view t, std::size_t i) {
    while (i < t.size() && ws(t[i]))
        ++i;
    return i;
}

std::size_t string_end(std::string_view t, std::size_t i) {  // i at the opening quote
    for (++i; i < t.size(); ++i) {
        if (t[i] == '\\') {
            ++i;
        } else if (t[i] == '"') {
            return i + 1;
        }
    }
    return t.size();
}

std::size_t value_end(std::string_view t, std::size_t i) {
    if (t[i] == '"') return string_end(t, i);
    if (t[i] == '{' || t[i] == '[') {
        int depth = 0;
        for (; i < t.size(); ++i) {
            char c = t[i];
            if (c == '"') {
                i = string_end(t, i) - 1;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1;
            }
        }
        return t.size();
    }
    while (i < t.size() && !ws(t[i]) && t[i] != ',' && t[i] != '}' && t[i] != ']')
        ++i;
    return i;
}

// The members of the object / elements of the array whose opening bracket is at `open`.
std::vector<Item> items(std::string_view t, std::size_t open) {
    std::vector<Item> out;
    bool object = t[open] == '{';
    std::size_t i = skip_ws(t, open + 1);
    while (i < t.size() && t[i] != '}' && t[i] != ']') {
        Item item;
        item.begin = i;
        if (object) {
            std::size_t key_end = string_end(t, i);
            item.key = ordered::parse(t.substr(i, key_end - i)).get<std::string>();
            i = skip_ws(t, key_end);
            i = skip_ws(t, i + 1);  // the ':'
        }
        item.value_begin = i;
        item.value_end = value_end(t, i);
        out.push_back(item);
        i = skip_ws(t, item.value_end);
        if (i < t.size() && t[i] == ',') i = skip_ws(t, i + 1);
    }
    return out;
}

std::optional<Item> find(const std::vector<Item>& list, std::string_view key) {
    for (const Item& item : list)
        if (item.key == key) return item;
    return std::nullopt;
}

// Claude Code reads settings with JSON.parse, where the last of two equal keys wins; nlohmann keeps the
// first. Rather than edit the entry Claude Code does not read, a duplicate key on the way to the entry is
// refused.
bool duplicated(const std::vector<Item>& list, std::string_view key) {
    return std::count_if(list.begin(), list.end(), [&](const Item& item) { return item.key == key; }) > 1;
}

// The whitespace before `pos` on its line, when only whitespace precedes it there.
std::string line_indent(std::string_view t, std::size_t pos) {
    std::size_t start = pos;
    while (start > 0 && (t[start - 1] == ' ' || t[start - 1] == '\t'))
        --start;
    if (start > 0 && t[start - 1] != '\n') return "";
    return std::string(t.substr(start, pos - start));
}

// `value` as JSON text whose continuation lines start with `indent`.
std::string render(const ordered& value, const std::string& indent) {
    std::string text = value.dump(2);
    std::string out;
    for (char c : text) {
        out += c;
        if (c == '\n') out += indent;
    }
    return out;
}

// Inserts `piece` (`"key": value` or a value) as the last item of the container opened at `open`.
void append(std::string& t, std::size_t open, const std::string& key, const ordered& value) {
    std::vector<Item> list = items(t, open);
    std::string head = key.empty() ? "" : ordered(key).dump() + ": ";
    if (!list.empty()) {
        std::string indent = line_indent(t, list.back().begin);
        std::string separator =
            indent.empty() && t.find('\n', open) > list.back().value_end ? " " : "\n" + indent;
        t.insert(list.back().value_end, "," + separator + head + render(value, indent));
        return;
    }
    std::size_t close = value_end(t, open) - 1;
    std::string closing = line_indent(t, close);
    std::string indent = closing + "  ";
    t.replace(open + 1, close - open - 1, "\n" + indent + head + render(value, indent) + "\n" + closing);
}

// Removes item `k` of the container opened at `open`, with its separator.
void remove(std::string& t, std::size_t open, std::size_t k) {
    std::vector<Item> list = items(t, open);
    if (k > 0) {
        t.erase(list[k - 1].value_end, list[k].value_end - list[k - 1].value_end);
    } else if (list.size() > 1) {
        t.erase(list[0].begin, list[1].begin - list[0].begin);
    } else {
        std::size_t close = value_end(t, open) - 1;
        t.erase(open + 1, close - open - 1);
    }
}

ordered entry(const std::string& command, std::string_view event) {
    ordered hook = ordered::object();
    hook["type"] = "command";
    hook["command"] = command;
    ordered e = ordered::object();
    if (event == "PreToolUse") e["matcher"] = "Bash";
    e["hooks"] = ordered::array({hook});
    return e;
}

// An element of hooks.EVENT whose every hook runs cordon claude-hook.
bool is_cordon_entry(const ordered& element) {
    if (!element.is_object()) return false;
    auto hooks = element.find("hooks");
    if (hooks == element.end() || !hooks->is_array() || hooks->empty()) return false;
    for (const auto& hook : *hooks) {
        if (!hook.is_object()) return false;
        auto command = hook.find("command");
        if (command == hook.end() || !command->is_string() ||
            !is_cordon_hook_command(command->get<std::string>()))
            return false;
    }
    return true;
}

struct Located {
    std::string error;
    std::size_t top = 0;               // the top-level object's '{'
    std::optional<Item> hooks;         // the hooks member of the top object
    std::optional<Item> pre_tool_use;  // the EVENT member of hooks (PreToolUse or SessionEnd)
    std::vector<Item> top_items, hook_items, entries;
    std::size_t cordon_entry = SIZE_MAX;  // index into entries
};

Located locate(std::string_view t, std::string_view event) {
    const std::string name(event);
    Located l;
    ordered root = ordered::parse(t, nullptr, false);
    if (root.is_discarded()) {
        l.error = "not valid JSON";
        return l;
    }
    if (!root.is_object()) {
        l.error = "the top level is not a JSON object";
        return l;
    }
    l.top = skip_ws(t, 0);
    l.top_items = items(t, l.top);
    if (duplicated(l.top_items, "hooks")) {
        l.error = "\"hooks\" appears twice";
        return l;
    }
    l.hooks = find(l.top_items, "hooks");
    if (!l.hooks) return l;
    if (t[l.hooks->value_begin] != '{') {
        l.error = "\"hooks\" is not an object";
        return l;
    }
    l.hook_items = items(t, l.hooks->value_begin);
    if (duplicated(l.hook_items, name)) {
        l.error = "\"hooks." + name + "\" appears twice";
        return l;
    }
    l.pre_tool_use = find(l.hook_items, name);
    if (!l.pre_tool_use) return l;
    if (t[l.pre_tool_use->value_begin] != '[') {
        l.error = "\"hooks." + name + "\" is not an array";
        return l;
    }
    l.entries = items(t, l.pre_tool_use->value_begin);
    for (std::size_t k = 0; k < l.entries.size(); ++k) {
        const Item& e = l.entries[k];
        if (is_cordon_entry(ordered::parse(t.substr(e.value_begin, e.value_end - e.value_begin)))) {
            l.cordon_entry = k;
            break;
        }
    }
    return l;
}

}  // namespace

bool is_cordon_hook_command(std::string_view command) {
    // The first two words, single quotes removed (the installer quotes the path when it must).
    std::vector<std::string> words;
    std::string word;
    bool quoted = false, in_word = false;
    for (char c : command) {
        if (c == '\'') {
            quoted = !quoted;
            in_word = true;
            continue;
        }
        if (!quoted && (c == ' ' || c == '\t')) {
            if (in_word) words.push_back(word);
            word.clear();
            in_word = false;
            if (words.size() == 2) break;
            continue;
        }
        word += c;
        in_word = true;
    }
    if (in_word && words.size() < 2) words.push_back(word);
    if (words.size() < 2 || words[1] != "claude-hook") return false;
    const std::string& program = words[0];
    std::size_t slash = program.rfind('/');
    return program.substr(slash == std::string::npos ? 0 : slash + 1) == "cordon";
}

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

// A UTF-8 byte order mark (which Claude Code accepts and some Windows editors write) is kept as it was and
// left out of the edit.
std::string_view without_bom(std::string_view text) {
    return text.substr(0, kBom.size()) == kBom ? text.substr(kBom.size()) : text;
}

SettingsEdit with_bom(std::string_view original, SettingsEdit edit) {
    if (original.substr(0, kBom.size()) == kBom) edit.text.insert(0, kBom);
    return edit;
}

SettingsEdit install(std::string_view original, const std::string& hook_command, std::string_view event);
SettingsEdit uninstall(std::string_view original, std::string_view event);

}  // namespace

SettingsEdit install_hook(std::string_view original, const std::string& hook_command,
                          std::string_view event) {
    return with_bom(original, install(without_bom(original), hook_command, event));
}

SettingsEdit uninstall_hook(std::string_view original, std::string_view event) {
    return with_bom(original, uninstall(without_bom(original), event));
}

namespace {

SettingsEdit install(std::string_view original, const std::string& hook_command, std::string_view event) {
    SettingsEdit out;
    std::string t(original);
    if (t.find_first_not_of(" \t\r\n") == std::string::npos) t = "{}\n";
    Located l = locate(t, event);
    if (!l.error.empty()) {
        out.error = l.error;
        return out;
    }
    const ordered want = entry(hook_command, event);
    const std::string name(event);
    if (!l.hooks) {
        append(t, l.top, "hooks", ordered{{name, ordered::array({want})}});
    } else if (!l.pre_tool_use) {
        append(t, l.hooks->value_begin, name, ordered::array({want}));
    } else if (l.cordon_entry == SIZE_MAX) {
        append(t, l.pre_tool_use->value_begin, "", want);
    } else {
        const Item& e = l.entries[l.cordon_entry];
        if (ordered::parse(t.substr(e.value_begin, e.value_end - e.value_begin)) == want) {
            out.text = std::string(original);
            return out;  // already installed, as asked
        }
        t.replace(e.value_begin, e.value_end - e.value_begin, render(want, line_indent(t, e.value_begin)));
    }
    out.text = std::move(t);
    out.changed = true;
    return out;
}

SettingsEdit uninstall(std::string_view original, std::string_view event) {
    SettingsEdit out;
    out.text = std::string(original);
    if (out.text.find_first_not_of(" \t\r\n") == std::string::npos) return out;
    Located l = locate(out.text, event);
    if (!l.error.empty()) {
        out.error = l.error;
        return out;
    }
    if (l.cordon_entry == SIZE_MAX) return out;
    std::string& t = out.text;
    remove(t, l.pre_tool_use->value_begin, l.cordon_entry);
    out.changed = true;
    // What the installer made for the entry goes with it: an empty PreToolUse, then an empty hooks.
    l = locate(t, event);
    if (l.pre_tool_use && l.entries.empty()) {
        for (std::size_t k = 0; k < l.hook_items.size(); ++k)
            if (l.hook_items[k].key == event) remove(t, l.hooks->value_begin, k);
        l = locate(t, event);
    }
    if (l.hooks && l.hook_items.empty()) {
        for (std::size_t k = 0; k < l.top_items.size(); ++k)
            if (l.top_items[k].key == "hooks") remove(t, l.top, k);
    }
    return out;
}

}  // namespace

}  // namespace cordon::agent
