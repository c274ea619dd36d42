#include "proxy/control_channel.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <stdexcept>

#include "proxy/context.hpp"
#include "proxy/control_line.hpp"

namespace cordon::proxy {

using json = nlohmann::json;

namespace {
constexpr std::size_t kMaxLine = 1 << 20;    // a longer line is refused (and skipped up to its newline)
constexpr std::size_t kMaxQueued = 4 << 20;  // bytes waiting for a slow peer; beyond, lines to it are dropped

// An open ask's token: dropping the last reference withdraws the question.
struct Withdraw {
    std::function<void()> fn;
    ~Withdraw() {
        if (fn) fn();
    }
};

std::string dump_line(const json& j) {
    return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}
}  // namespace

struct ControlChannel::Peer {
    uv_pipe_t pipe{};
    ControlChannel* owner = nullptr;
    std::string in;
    bool skipping = false;  // inside a line that was too long
    std::size_t queued = 0;
    bool closing = false;
};

ControlChannel::ControlChannel(Context& context, std::function<void(policy::PolicyPtr)> set_policy)
    : context_(context), set_policy_(std::move(set_policy)) {}

ControlChannel::~ControlChannel() {
    *alive_ = false;
    for (auto& [id, pending] : pending_) {
        uv_timer_stop(pending.timer);
        uv_close(reinterpret_cast<uv_handle_t*>(pending.timer),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    }
    pending_.clear();
    timer_ids_.clear();
    for (Peer* peer : peers_) {
        peer->owner = nullptr;
        if (!peer->closing)
            uv_close(reinterpret_cast<uv_handle_t*>(&peer->pipe),
                     [](uv_handle_t* h) { delete static_cast<Peer*>(h->data); });
    }
    if (server_)
        uv_close(reinterpret_cast<uv_handle_t*>(server_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_pipe_t*>(h); });
}

void ControlChannel::serve_fd(int fd) {
    auto* peer = new Peer;
    uv_pipe_init(context_.loop, &peer->pipe, 0);
    peer->pipe.data = peer;
    if (int rc = uv_pipe_open(&peer->pipe, fd); rc != 0) {
        uv_close(reinterpret_cast<uv_handle_t*>(&peer->pipe),
                 [](uv_handle_t* h) { delete static_cast<Peer*>(h->data); });
        throw std::runtime_error(std::string("control channel: fd ") + std::to_string(fd) + ": " +
                                 uv_strerror(rc));
    }
    peer->owner = this;
    peers_.push_back(peer);
    add_peer(reinterpret_cast<uv_stream_t*>(&peer->pipe));
}

void ControlChannel::listen_unix(const std::string& path) {
    server_ = new uv_pipe_t;
    uv_pipe_init(context_.loop, server_, 0);
    server_->data = this;
    ::unlink(path.c_str());  // a socket left by an earlier run
    int rc = uv_pipe_bind(server_, path.c_str());
    if (rc == 0) ::chmod(path.c_str(), 0600);  // the channel changes the policy: its owner only
    if (rc == 0)
        rc = uv_listen(reinterpret_cast<uv_stream_t*>(server_), 8, [](uv_stream_t* server, int status) {
            auto* self = static_cast<ControlChannel*>(server->data);
            if (status < 0 || !self) return;
            auto* peer = new Peer;
            uv_pipe_init(self->context_.loop, &peer->pipe, 0);
            peer->pipe.data = peer;
            if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&peer->pipe)) != 0) {
                uv_close(reinterpret_cast<uv_handle_t*>(&peer->pipe),
                         [](uv_handle_t* h) { delete static_cast<Peer*>(h->data); });
                return;
            }
            peer->owner = self;
            self->peers_.push_back(peer);
            self->add_peer(reinterpret_cast<uv_stream_t*>(&peer->pipe));
        });
    if (rc != 0)
        throw std::runtime_error("control channel: cannot listen on " + path + ": " + uv_strerror(rc));
}

void ControlChannel::add_peer(uv_stream_t* stream) {
    uv_read_start(
        stream,
        [](uv_handle_t*, size_t suggested, uv_buf_t* buf) {
            buf->base = new char[suggested];
            buf->len = suggested;
        },
        [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
            auto* peer = static_cast<Peer*>(s->data);
            std::unique_ptr<char[]> owned(buf->base);
            if (!peer->owner) return;
            if (n > 0) peer->owner->on_data(*peer, buf->base, static_cast<std::size_t>(n));
            if (n < 0) peer->owner->drop_peer(peer);
        });
}

void ControlChannel::drop_peer(Peer* peer) {
    peers_.erase(std::remove(peers_.begin(), peers_.end(), peer), peers_.end());
    peer->owner = nullptr;
    peer->closing = true;
    uv_close(reinterpret_cast<uv_handle_t*>(&peer->pipe),
             [](uv_handle_t* h) { delete static_cast<Peer*>(h->data); });
    if (peers_.empty()) {
        // Nobody is left to answer: the waiting connections are refused now rather than at the timeout.
        std::vector<std::uint64_t> ids;
        for (auto& [id, pending] : pending_)
            ids.push_back(id);
        for (std::uint64_t id : ids)
            answer(id, AskAnswer{false, "no peer"});
    }
}

void ControlChannel::on_data(Peer& peer, const char* data, std::size_t size) {
    Peer* self = &peer;
    std::size_t start = 0;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] != '\n') continue;
        if (!self->skipping) {
            self->in.append(data + start, i - start);
            std::string line = std::move(self->in);
            self->in.clear();
            if (line.find_first_not_of(" \t\r") != std::string::npos) on_line(line);
        }
        self->skipping = false;
        start = i + 1;
    }
    if (!self->skipping) self->in.append(data + start, size - start);
    if (self->in.size() > kMaxLine) {
        self->in.clear();
        self->skipping = true;
        send(json{{"error", "a line longer than 1 MiB; skipped"}});
    }
}

void ControlChannel::on_line(std::string_view line) {
    ControlMessage message = parse_control_line(line);
    if (auto* error = std::get_if<ControlError>(&message)) {
        send(json{{"error", error->message}});
        return;
    }
    if (auto* a = std::get_if<ControlAnswer>(&message)) {
        auto it = pending_.find(a->id);
        if (it == pending_.end()) {
            send(json{{"error",
                       "answer: no open ask with id " + std::to_string(a->id) + " (answered or timed out)"}});
            return;
        }
        std::string host = it->second.host;
        answer(a->id, AskAnswer{a->allow, "answered"});
        if (a->remember) remember(host, a->allow);
        return;
    }
    auto& update = std::get<ControlUpdate>(message);
    json merged = layer_;
    merged.merge_patch(update.settings);
    apply(merged, update.filesystem);
}

void ControlChannel::apply(const json& settings, bool filesystem) {
    if (!context_.options.reload) {
        send(json{{"error", "this proxy does not take settings updates"}});
        return;
    }
    auto result = context_.options.reload(settings.dump());
    if (auto* error = std::get_if<std::string>(&result)) {
        send(json{{"error", "update refused, the policy stays as it was: " + *error}});
        return;
    }
    auto policy = std::get<policy::PolicyPtr>(std::move(result));
    layer_ = settings;
    json warnings = policy->warnings();
    // An allow entry of this layer that allowManagedDomainsOnly drops changes nothing: the peer must hear so.
    for (const auto& rule : policy->network().ignored_allows)
        if (rule.source.layer == policy::Layer::Control)
            warnings.push_back(
                "allowedDomains " + rule.text +
                ": ignored, allowManagedDomainsOnly (managed settings) admits managed domains only");
    json updated = {{"allowedDomains", policy->network().allowed_domains.size()},
                    {"deniedDomains", policy->network().denied_domains.size()},
                    {"warnings", std::move(warnings)}};
    if (filesystem)
        updated["note"] = "filesystem rules cannot change for a running jail; they are not applied";
    set_policy_(std::move(policy));
    send(json{{"updated", std::move(updated)}});
}

void ControlChannel::remember(const std::string& host, bool allow) {
    // An IPv6 literal is written bracketed, as srt's lists want it.
    std::string entry = host.find(':') != std::string::npos ? "[" + host + "]" : host;
    json merged = layer_;
    json& list = merged["sandbox"]["network"][allow ? "allowedDomains" : "deniedDomains"];
    if (!list.is_array()) list = json::array();
    list.push_back(entry);
    apply(merged, false);
    // Other connections waiting for the same host get the same answer.
    std::vector<std::uint64_t> same;
    for (auto& [id, pending] : pending_)
        if (pending.host == host) same.push_back(id);
    for (std::uint64_t id : same)
        answer(id, AskAnswer{allow, "answered"});
}

void ControlChannel::answer(std::uint64_t id, AskAnswer a) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    auto done = std::move(it->second.done);
    timer_ids_.erase(it->second.timer);
    uv_timer_stop(it->second.timer);
    uv_close(reinterpret_cast<uv_handle_t*>(it->second.timer),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    pending_.erase(it);
    if (done) done(std::move(a));
}

std::shared_ptr<void> ControlChannel::ask(const std::string& host, std::uint16_t port,
                                          const std::string& proto, std::function<void(AskAnswer)> done) {
    if (peers_.empty()) return nullptr;
    std::uint64_t id = next_id_++;
    Pending& p = pending_[id];
    p.host = host;
    p.port = port;
    p.done = std::move(done);
    p.timer = new uv_timer_t;
    uv_timer_init(context_.loop, p.timer);
    // The channel outlives its timers (closed in the destructor); the map gives a timer's ask.
    p.timer->data = this;
    timer_ids_[p.timer] = id;
    uv_timer_start(
        p.timer,
        [](uv_timer_t* t) {
            auto* self = static_cast<ControlChannel*>(t->data);
            auto it = self->timer_ids_.find(t);
            if (it == self->timer_ids_.end()) return;
            self->answer(it->second, AskAnswer{false, "timeout"});
        },
        static_cast<std::uint64_t>(context_.options.ask_timeout.count()), 0);
    send(json{{"ask", {{"id", id}, {"host", host}, {"port", port}, {"proto", proto}}}});
    std::weak_ptr<bool> alive = alive_;
    auto token = std::make_shared<Withdraw>();
    token->fn = [this, alive, id] {
        if (auto a = alive.lock(); a && *a) {
            auto it = pending_.find(id);
            if (it == pending_.end()) return;
            it->second.done = nullptr;  // withdrawn: the connection is gone
            answer(id, AskAnswer{false, "withdrawn"});
        }
    };
    return token;
}

void ControlChannel::refused(const DecisionEvent& e) {
    if (peers_.empty()) return;
    send(json{{"refused",
               {{"kind", "connection"},
                {"id", e.id},
                {"host", e.host},
                {"port", e.port},
                {"proto", e.proto},
                {"reason", e.reason},
                {"rule", e.rule},
                {"source", e.source},
                {"reason_text", e.reason_text},
                {"error", e.error}}}});
}

void ControlChannel::refused(const WriteEvent& e) {
    if (peers_.empty()) return;
    send(json{{"refused",
               {{"kind", "write"},
                {"id", e.id},
                {"path", e.path},
                {"operation", e.operation},
                {"reason", e.reason},
                {"rule", e.rule.empty() ? json(nullptr) : json(e.rule)},
                {"source", e.source},
                {"write_rule", e.write_rule},
                {"error", e.error},
                {"pid", e.pid},
                {"program", e.program}}}});
}

void ControlChannel::send(const json& message) {
    const std::string line = dump_line(message);
    for (Peer* peer : peers_) {
        if (peer->queued + line.size() > kMaxQueued) continue;  // a peer that does not read loses lines
        struct Write {
            uv_write_t req;
            std::string data;
            Peer* peer;
        };
        auto* w = new Write{{}, line, peer};
        uv_buf_t buf = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
        peer->queued += line.size();
        w->req.data = w;
        int rc =
            uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&peer->pipe), &buf, 1, [](uv_write_t* req, int) {
                auto* write = static_cast<Write*>(req->data);
                write->peer->queued -= write->data.size();
                delete write;
            });
        if (rc != 0) {
            peer->queued -= line.size();
            delete w;
        }
    }
}

}  // namespace cordon::proxy
