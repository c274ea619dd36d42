// The writes the jail refused: counted, summarised, and handed to the loop (write_refusals.hpp).
#include "run/write_refusals.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "policy/syntax.hpp"
#include "policy/write_rules.hpp"

namespace cordon::run {

namespace {

std::string errno_name(int error) {
    switch (error) {
        case EROFS:
            return "EROFS";
        case EACCES:
            return "EACCES";
        case EPERM:
            return "EPERM";
        case ENOENT:
            return "ENOENT";
        default:
            return std::to_string(error);
    }
}

// What --allow-write (sandbox.filesystem.allowWrite) lifts: a path outside every writable area, decided by
// the path rules (or, without namespaces, the host's /tmp outside the run's TMPDIR).
bool lifted_by_allow_write(const WriteRefusalSummary::Entry& e) {
    return e.reason == "default-deny" && (e.write_rule == "path-rules" || e.write_rule == "default-tmp");
}

}  // namespace

proxy::WriteEvent describe(const jail::RefusedWrite& r, std::uint64_t id) {
    policy::WriteDecision wd;
    wd.error = r.error;
    wd.rule = r.rule;
    wd.path_rule = r.path_rule;
    const policy::Decision d = policy::explain_write(wd);
    proxy::WriteEvent e;
    e.id = id;
    e.path = r.path;
    e.operation = r.operation;
    e.reason = std::string(policy::to_string(d.reason));
    if (d.rule) {
        e.rule = d.rule->text;
        e.source = policy::format_source(d.rule->source);
    }
    e.write_rule = r.rule ? std::string(r.rule->name) : std::string();
    e.error = errno_name(r.error);
    e.pid = r.pid;
    e.program = r.program;
    return e;
}

WriteRefusals::WriteRefusals(uv_loop_t* loop, std::function<void(const proxy::WriteEvent&)> report)
    : async_(new uv_async_t{}), report_(std::move(report)) {
    uv_async_init(loop, async_, [](uv_async_t* handle) {
        if (handle->data) static_cast<WriteRefusals*>(handle->data)->drain();
    });
    async_->data = this;
}

WriteRefusals::~WriteRefusals() {
    std::lock_guard<std::mutex> lock(mu_);
    close_async();
}

void WriteRefusals::close_async() {
    if (!open_) return;
    open_ = false;
    async_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(async_),
             [](uv_handle_t* handle) { delete reinterpret_cast<uv_async_t*>(handle); });
}

void WriteRefusals::add(jail::RefusedWrite&& refusal) {
    proxy::WriteEvent e = describe(refusal, 0);
    std::lock_guard<std::mutex> lock(mu_);
    e.id = ++summary_.total;
    auto key = std::make_tuple(e.path, e.write_rule, e.rule);
    auto it = summary_.groups.find(key);
    if (it == summary_.groups.end()) {
        if (summary_.groups.size() >= kMaxPaths) {
            ++summary_.beyond;
        } else {
            auto& entry = summary_.groups[key];
            entry.reason = e.reason;
            entry.rule = e.rule;
            entry.source = e.source;
            entry.write_rule = e.write_rule;
            entry.error = e.error;
            entry.first = e.id;
            const bool own =
                refusal.path_rule.rule && refusal.path_rule.reason == policy::Reason::AlwaysReadOnly;
            entry.private_dir = own && refusal.path_rule.rule->source.where == policy::kPrivateDirWhere;
            entry.session_dir = own && refusal.path_rule.rule->source.where == policy::kSessionDirWhere;
            it = summary_.groups.find(key);
        }
    }
    if (it != summary_.groups.end()) {
        ++it->second.count;
        it->second.operations.insert(e.operation);  // a handful of names at most
        it->second.program = e.program;
    }
    if (!open_ || !report_) return;
    if (queue_.size() >= kMaxQueued) {
        ++summary_.unlogged;
        return;
    }
    queue_.push_back(std::move(e));
    if (queue_.size() == 1) uv_async_send(async_);  // never blocks: a write to the loop's eventfd
}

void WriteRefusals::drain(bool last) {
    std::deque<proxy::WriteEvent> batch;
    {
        std::lock_guard<std::mutex> lock(mu_);
        batch.swap(queue_);
        if (last) close_async();
    }
    if (report_)
        for (const auto& e : batch)
            report_(e);
}

WriteRefusalSummary WriteRefusals::summary() const {
    std::lock_guard<std::mutex> lock(mu_);
    return summary_;
}

std::string format_write_refusals(const WriteRefusalSummary& summary, bool logged) {
    if (summary.total == 0) return "";
    using Key = std::tuple<std::string, std::string, std::string>;
    using Item = std::pair<Key, WriteRefusalSummary::Entry>;
    std::vector<Item> items(summary.groups.begin(), summary.groups.end());
    std::sort(items.begin(), items.end(),
              [](const Item& a, const Item& b) { return a.second.first < b.second.first; });

    constexpr std::size_t kMax = WriteRefusals::kShownPerSection;
    auto who = [](const WriteRefusalSummary::Entry& e) {
        std::string ops;
        for (const auto& op : e.operations)
            ops += (ops.empty() ? "" : ", ") + op;
        return "  (" + ops + (e.program.empty() ? "" : " by " + policy::printable(e.program)) + ")";
    };
    auto section = [&](const std::string& title, auto&& fits, auto&& detail, const std::string& advice) {
        // The section's groups in the order first seen (items is sorted so).
        std::vector<const Item*> in;
        for (const auto& item : items)
            if (fits(item.second)) in.push_back(&item);
        if (in.empty()) return std::string();
        // Why chosen so: a flood of refusals (a loop over many paths, or one path refused thousands of times)
        // must not push an earlier, different refusal off the page, as an order by count would. Each distinct
        // rule keeps the line of its first path, the most refused group keeps one (where the flood is), the
        // first seen take the rest.
        std::vector<bool> shown(in.size(), false);
        std::size_t n = 0;
        std::set<std::pair<std::string, std::string>> rules;
        for (std::size_t i = 0; i < in.size() && n < kMax; ++i)
            if (rules.emplace(std::get<1>(in[i]->first), std::get<2>(in[i]->first)).second) {
                shown[i] = true;
                ++n;
            }
        std::size_t most = 0;
        for (std::size_t i = 1; i < in.size(); ++i)
            if (in[i]->second.count > in[most]->second.count) most = i;
        if (n < kMax && !shown[most]) {
            shown[most] = true;
            ++n;
        }
        for (std::size_t i = 0; i < in.size() && n < kMax; ++i)
            if (!shown[i]) {
                shown[i] = true;
                ++n;
            }
        std::string out;
        for (std::size_t i = 0; i < in.size(); ++i)
            if (shown[i])
                out += "    " + policy::printable(std::get<0>(in[i]->first)) + "  x" +
                       std::to_string(in[i]->second.count) + detail(in[i]->second) + who(in[i]->second) +
                       "\n";
        if (in.size() > n) out += "    ... and " + std::to_string(in.size() - n) + " more path(s)\n";
        return "  " + title + ":\n" + out + (advice.empty() ? "" : "    (" + advice + ")\n");
    };
    auto by_rule = [](const WriteRefusalSummary::Entry& e) {
        if (e.write_rule != "path-rules") return "  write rule " + e.write_rule;
        return "  by `" + policy::printable(e.rule) + "`" +
               (e.source.empty() ? "" : " from " + policy::printable(e.source));
    };

    std::string out = "cordon: refused " + std::to_string(summary.total) + " write(s):\n";
    out += section(
        "outside the writable areas", lifted_by_allow_write,
        [](const WriteRefusalSummary::Entry&) { return std::string(); },
        "allow with --allow-write PATH or sandbox.filesystem.allowWrite (srt: filesystem.allowWrite); "
        "`cordon check write:PATH` explains");
    auto denied = [](const WriteRefusalSummary::Entry& e) { return e.reason == "blocked-by-denylist"; };
    out +=
        section("denied by a deny rule", denied, by_rule,
                "a deny rule (denyWrite, an Edit deny rule) wins over allowWrite: remove the rule to write "
                "these");
    // Why each rule met here refuses, once per rule.
    std::set<std::string> rules;
    bool protected_names = false, private_dir = false, session_dir = false;
    auto never = [&](const WriteRefusalSummary::Entry& e) { return !lifted_by_allow_write(e) && !denied(e); };
    for (const auto& [key, e] : items) {
        if (!never(e)) continue;
        if (e.private_dir)
            private_dir = true;
        else if (e.session_dir)
            session_dir = true;
        else if (e.write_rule == "path-rules")
            protected_names = true;
        else
            rules.insert(e.write_rule);
    }
    std::string why;
    if (protected_names)
        why +=
            "the protected names (settings files, shell start-up files, .gitconfig, .mcp.json, .vscode, "
            ".git/hooks and .git/config of a .git that existed when the run started, ...) are read-only "
            "whatever the settings say";
    if (private_dir)
        why += std::string(why.empty() ? "" : "; ") +
               "cordon's CA directory holds the private key that signs what the jail's clients trust: no "
               "jailed command reads or writes it, whatever the settings say (--ca-dir names another)";
    if (session_dir)
        why += std::string(why.empty() ? "" : "; ") +
               "cordon's sessions (their registry, control sockets and directories) keep a jailed command "
               "from joining or impersonating a session: no jailed command writes them, whatever the "
               "settings say";
    for (const std::string& name : rules) {
        std::string text;
        try {
            const auto& rule = policy::write_rule(name);
            text = name + ": " + std::string(rule.why);
            if (name == "repository-shape")
                text += " (sandbox.filesystem.allowBareRepositories lifts it)";
            else if (name == "read-rules-hide")
                text += " (a denyRead rule or the read scope hides it)";
        } catch (const std::exception&) {
            text = name;
        }
        why += (why.empty() ? "" : "; ") + text;
    }
    out += section("never allowed: --allow-write does not lift these", never, by_rule, why);
    if (summary.beyond > 0)
        out += "  ... and " + std::to_string(summary.beyond) +
               " more refused write(s) to other paths (past " + std::to_string(WriteRefusals::kMaxPaths) +
               " paths counted)\n";
    if (logged && summary.unlogged > 0)
        out += "  (" + std::to_string(summary.unlogged) +
               " of them not in the audit log nor on the control channel: they came faster than the "
               "supervisor could write them)\n";
    return out;
}

}  // namespace cordon::run
