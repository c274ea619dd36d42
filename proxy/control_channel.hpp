// The control channel: JSON lines between the proxy and an agent harness (srt's --control-fd and ask
// callback). Internal to proxy/; Proxy::serve_control_fd / listen_control create it.
//
// In (proxy/control_line.hpp): settings updates, merged (RFC 7386 merge patch: objects merge, arrays and
// scalars replace, null removes) into one Control layer that sits right below managed settings; the policy
// is rebuilt with it (Options::reload) and used by new connections at once. A running jail's filesystem
// rules do not change (its mounts are made at start). Answers to asks.
// Out, one JSON object per line, to every connected peer:
//   {"updated": {"allowedDomains": N, "deniedDomains": N, "warnings": [...]}}  an update took effect
//   {"error": "..."}                    a line that could not be used (the channel stays open)
//   {"ask": {"id", "host", "port", "proto"}}   a connection waits for {"answer": ...}
//   {"refused": {"kind": "connection", "id", "host", "port", "proto", "reason", "rule", "source", "error"}}
//                                       one per refused connection
//   {"refused": {"kind": "write", "id", "path", "operation", "reason", "rule", "source", "write_rule",
//                "error", "pid", "program"}}   one per write the jail refused (cordon run)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "proxy/audit_log.hpp"

struct uv_pipe_s;
struct uv_stream_s;
struct uv_timer_s;

namespace cordon::proxy {

struct Context;

struct AskAnswer {
    bool allow = false;
    std::string why;  // "answered", "timeout", "no peer"
};

class ControlChannel {
  public:
    ControlChannel(Context& context, std::function<void(policy::PolicyPtr)> set_policy);
    ~ControlChannel();
    ControlChannel(const ControlChannel&) = delete;
    ControlChannel& operator=(const ControlChannel&) = delete;

    void serve_fd(int fd);
    void listen_unix(const std::string& path);

    // Asks the peers about host:port. Returns a token that keeps the question open (dropping it withdraws
    // the question), or nullptr when nobody can answer. `done` runs once, unless the token is dropped first.
    std::shared_ptr<void> ask(const std::string& host, std::uint16_t port, const std::string& proto,
                              std::function<void(AskAnswer)> done);
    // One `refused` line.
    void refused(const DecisionEvent& event);
    void refused(const WriteEvent& event);

  private:
    struct Peer;
    struct Pending {
        std::string host;
        std::uint16_t port = 0;
        uv_timer_s* timer = nullptr;
        std::function<void(AskAnswer)> done;
    };

    void add_peer(uv_stream_s* stream);
    void on_data(Peer& peer, const char* data, std::size_t size);
    void on_line(std::string_view line);
    void drop_peer(Peer* peer);
    void send(const nlohmann::json& message);
    void apply(const nlohmann::json& settings, bool filesystem);
    void answer(std::uint64_t id, AskAnswer answer);
    void remember(const std::string& host, bool allow);

    Context& context_;
    std::function<void(policy::PolicyPtr)> set_policy_;
    nlohmann::json layer_ = nlohmann::json::object();  // the merged updates
    std::vector<Peer*> peers_;
    uv_pipe_s* server_ = nullptr;
    std::map<std::uint64_t, Pending> pending_;
    std::map<uv_timer_s*, std::uint64_t> timer_ids_;  // each open ask's timer
    std::uint64_t next_id_ = 1;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace cordon::proxy
