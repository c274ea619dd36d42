// The writes the jail refused (jail/notify.hpp RefusedWrite), seen three ways: counted for the end-of-run
// summary (grouped by path and rule, with the advice that fits), and handed to the supervisor's loop, which
// writes an audit line `event: "write"` and tells the control channel (proxy::Proxy::record_write).
//
// Why a queue: the notifier's thread hands a refusal over while the jailed caller waits for its answer; it
// must never wait for the audit log's disk or a control peer. It takes a mutex held only for a map update
// and a queue push (the loop holds it only to swap the queue), and wakes the loop, which writes the audit
// line and the control line after the caller has its answer. Bounded against a flood (a loop of refused
// writes): at most kMaxPaths groups are counted (refusals beyond count in one number), and at most kMaxQueued
// refusals wait for the loop (beyond, they are counted in the summary only, and the summary says how many the
// log lacks).
#pragma once

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "jail/notify.hpp"
#include "proxy/audit_log.hpp"

namespace cordon::run {

// A refusal as the audit log and the control channel carry it (the explanation `cordon check write:PATH`
// gives: policy::explain_write).
proxy::WriteEvent describe(const jail::RefusedWrite& refusal, std::uint64_t id);

struct WriteRefusalSummary {
    struct Entry {
        std::size_t count = 0;
        std::string reason, rule, source, write_rule, error;
        std::set<std::string> operations;
        std::string program;       // the latest caller's
        std::uint64_t first = 0;   // the refusal that made the group (its id): the order they were seen in
        bool private_dir = false;  // a write into cordon's CA directory (policy::kPrivateDirWhere)
        bool session_dir = false;  // a write into cordon's sessions (policy::kSessionDirWhere)
    };
    // (path, write rule, rule text) -> what happened there
    std::map<std::tuple<std::string, std::string, std::string>, Entry> groups;
    std::uint64_t total = 0;     // every refusal
    std::uint64_t beyond = 0;    // refusals not in `groups` (past kMaxPaths groups)
    std::uint64_t unlogged = 0;  // refusals the audit log and the control channel did not get (queue full)
};

// The summary's section for writes: one group per path and rule, with the advice that fits it (never
// `--allow-write` for a path that no setting makes writable). Empty when nothing was refused. At most
// kShownPerSection groups per section, chosen so that a flood cannot hide what came before it: the first
// group of each distinct rule, then the most refused group, then the others in the order they were first
// seen; shown in that order, the rest counted.
std::string format_write_refusals(const WriteRefusalSummary& summary, bool logged);

class WriteRefusals {
  public:
    static constexpr std::size_t kMaxPaths = 1000;
    static constexpr std::size_t kMaxQueued = 4096;
    static constexpr std::size_t kShownPerSection = 15;

    // `report` runs on `loop`'s thread for each refusal (null: the summary only).
    WriteRefusals(uv_loop_t* loop, std::function<void(const proxy::WriteEvent&)> report);
    WriteRefusals(const WriteRefusals&) = delete;
    WriteRefusals& operator=(const WriteRefusals&) = delete;
    // Closes the loop's wake-up handle if drain(true) did not (the loop frees it on its next turn).
    ~WriteRefusals();

    // The notifier's sink (any thread): counts, and queues for the loop.
    void add(jail::RefusedWrite&& refusal);
    // Reports what waits now (the loop's thread), and, with `last`, stops: later refusals are only counted.
    // Called before the proxy shuts down, so that their audit lines are flushed with the others.
    void drain(bool last = false);
    WriteRefusalSummary summary() const;

  private:
    void close_async();  // with mu_ held

    mutable std::mutex mu_;
    WriteRefusalSummary summary_;
    std::deque<proxy::WriteEvent> queue_;
    bool open_ = true;
    // On the heap, freed by its close callback: a handle outlives this object until the loop has closed it.
    uv_async_t* async_;
    std::function<void(const proxy::WriteEvent&)> report_;
};

}  // namespace cordon::run
