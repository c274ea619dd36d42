// The proxy: owns the listeners, the connections and what they share (policy, resolver, guard, audit log,
// metrics), and runs the shutdown drain.
#include "proxy/proxy.hpp"

#include <uv.h>

#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

#include "policy/inspection.hpp"
#include "proxy/connection.hpp"
#include "proxy/context.hpp"
#include "proxy/control_channel.hpp"
#include "proxy/decision_log.hpp"
#include "proxy/dns_stub.hpp"
#include "proxy/forward.hpp"
#include "proxy/listener.hpp"
#include "proxy/tls_inspector.hpp"

namespace cordon::proxy {

namespace {

// Connections beyond --max-connections still get an answer (503 / SOCKS 0x01); beyond this many more they are
// closed at accept so that a flood cannot exhaust memory.
constexpr std::size_t kOverLimitSlack = 256;

// The --allow-address / allowedAddresses ranges as the policy parsed them (one CIDR parser, in policy/): an
// entry it refused never loaded, so nothing is dropped here.
std::vector<Cidr> allowed_ranges(const policy::Policy& policy) {
    std::vector<Cidr> out;
    for (const auto& range : policy.network().allowed_ranges)
        out.push_back(Cidr::from(range));
    return out;
}

class ProxyImpl final : public Proxy {
  public:
    ProxyImpl(uv_loop_t* loop, policy::PolicyPtr policy, Options options,
              std::unique_ptr<Resolver> resolver) {
        if (!policy) throw std::runtime_error("proxy: no policy");
        context_.loop = loop;
        context_.options = std::move(options);
        context_.guard.set_allowed(allowed_ranges(*policy));
        context_.policy = std::move(policy);
        context_.audit = std::make_unique<AuditLog>(context_.options.audit_log, context_.options.sandbox_id);
        context_.metrics.audit = context_.audit.get();
        context_.metrics.report_only = context_.options.report_only;
        // The parent proxy: --parent-proxy, else sandbox.network.parentProxy, else (only when asked) the
        // host's HTTPS_PROXY / NO_PROXY.
        {
            const auto& settings = context_.policy->network().inspection->parent_proxy;
            std::string url = context_.options.parent_proxy, no_proxy = settings.no_proxy;
            if (url.empty()) url = !settings.https.empty() ? settings.https : settings.http;
            if (url.empty() && context_.options.parent_proxy_from_env) {
                for (const char* name : {"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"})
                    if (const char* v = std::getenv(name); v && *v && url.empty()) url = v;
                for (const char* name : {"NO_PROXY", "no_proxy"})
                    if (const char* v = std::getenv(name); v && *v && no_proxy.empty()) no_proxy = v;
            }
            if (!url.empty()) {
                auto parent = ParentProxy::parse(url, no_proxy);
                if (auto* error = std::get_if<std::string>(&parent)) throw std::runtime_error(*error);
                context_.parent = std::get<ParentProxy>(parent);
            }
        }
        if (context_.options.ca) {
            // Upstream CAs: --upstream-ca and srt's tlsTerminate.extraCaCertPaths.
            std::vector<std::string> upstream_ca = context_.options.upstream_ca;
            for (const auto& path : context_.policy->network().inspection->extra_ca_paths)
                upstream_ca.push_back(path);
            auto tls = TlsInspector::create(context_.options.ca, upstream_ca, context_.options.secrets);
            if (auto* error = std::get_if<std::string>(&tls)) throw std::runtime_error(*error);
            context_.tls = std::move(std::get<std::unique_ptr<TlsInspector>>(tls));
        }
        context_.resolver =
            resolver ? std::move(resolver) : Resolver::create(loop, context_.options.dns_servers);
        context_.retire = [this](Connection* c) { retire(c); };
        reaper_ = new uv_check_t;
        uv_check_init(loop, reaper_);
        reaper_->data = this;
        grace_timer_ = new uv_timer_t;
        uv_timer_init(loop, grace_timer_);
        grace_timer_->data = this;
    }

    ~ProxyImpl() override {
        forwards_.clear();
        for (auto& [ptr, conn] : connections_)
            conn->close("proxy destroyed");
        graveyard_.clear();
        listeners_.clear();
        dns_.reset();
        context_.control = nullptr;
        control_.reset();
        if (metrics_server_) metrics_server_->close();
        if (health_server_) health_server_->close();
        context_.resolver->close();
        reaper_->data = nullptr;
        grace_timer_->data = nullptr;
        uv_close(reinterpret_cast<uv_handle_t*>(reaper_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_check_t*>(h); });
        uv_close(reinterpret_cast<uv_handle_t*>(grace_timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
        if (context_.audit) context_.audit->flush();
    }

    std::uint16_t listen_tcp(const std::string& address) override {
        int fd = Listener::bind_tcp(address);
        listen_fd(fd);
        return listeners_.back()->local_address().port();
    }

    void listen_fd(int fd) override {
        auto listener = std::make_unique<Listener>(context_.loop, fd, [this](int client) { accept(client); });
        context_.guard.add_own_listener(listener->local_address());
        listeners_.push_back(std::move(listener));
        context_.metrics.listeners = listeners_.size();
    }

    void listen_transparent_fd(int fd) override {
        auto listener =
            std::make_unique<Listener>(context_.loop, fd, [this](int client) { accept(client, true); });
        context_.guard.add_own_listener(listener->local_address());
        listeners_.push_back(std::move(listener));
        context_.metrics.listeners = listeners_.size();
    }

    void serve_dns_fd(int fd) override {
        if (!dns_) dns_ = std::make_unique<DnsStub>(context_);
        dns_->serve(fd);
    }

    void serve_forward(int fd, Forward forward) override {
        forwards_.push_back(std::make_unique<Forwarder>(context_, fd, std::move(forward)));
    }

    void set_policy(policy::PolicyPtr policy) override {
        if (!policy) return;
        context_.guard.set_allowed(allowed_ranges(*policy));
        context_.policy = std::move(policy);
    }

    void serve_control_fd(int fd) override { control().serve_fd(fd); }
    void listen_control(const std::string& path) override { control().listen_unix(path); }

    void shutdown(std::chrono::milliseconds grace, std::function<void()> done) override {
        if (context_.draining) return;
        context_.draining = true;
        context_.metrics.draining = true;  // /readyz answers 503 from now on
        shutdown_done_ = std::move(done);
        listeners_.clear();
        // The jail is gone (cordon run drains at its end): its forwards' other ends with it.
        forwards_.clear();
        if (dns_) dns_->close();
        std::vector<Connection*> all;
        for (auto& [ptr, conn] : connections_)
            all.push_back(ptr);
        for (Connection* c : all)
            c->close_if_idle();
        if (connections_.empty()) {
            finish_shutdown();
            return;
        }
        uv_timer_start(
            grace_timer_,
            [](uv_timer_t* t) {
                auto* self = static_cast<ProxyImpl*>(t->data);
                if (!self) return;
                std::vector<Connection*> rest;
                for (auto& [ptr, conn] : self->connections_)
                    rest.push_back(ptr);
                for (Connection* c : rest)
                    c->close("shutdown: drain timeout");
                self->finish_shutdown();
            },
            static_cast<std::uint64_t>(grace.count()), 0);
    }

    RefusalSummary refusals() const override { return context_.refusals; }

    void record_write(const WriteEvent& event) override { record_decision(context_, event); }

    std::uint16_t serve_metrics(const std::string& address) override {
        metrics_server_ = MetricsServer::create(context_.loop, address, context_.metrics);
        return metrics_server_->port();
    }

    std::uint16_t serve_health(const std::string& address) override {
        health_server_ = MetricsServer::create(context_.loop, address, context_.metrics, true);
        return health_server_->port();
    }

    void count_policy_reload(bool ok) override {
        if (ok)
            ++context_.metrics.policy_reloads;
        else
            ++context_.metrics.policy_reload_failures;
    }

    std::size_t active_connections() const override {
        return connections_.size() + context_.forward_connections;
    }

    std::optional<std::string> reopen_audit_log() override { return context_.audit->reopen(); }

  private:
    ControlChannel& control() {
        if (!control_) {
            control_ = std::make_unique<ControlChannel>(
                context_, [this](policy::PolicyPtr p) { set_policy(std::move(p)); });
            context_.control = control_.get();
        }
        return *control_;
    }

    void accept(int fd, bool transparent = false) {
        if (context_.draining || connections_.size() >= context_.options.max_connections + kOverLimitSlack) {
            ++context_.metrics.connections_rejected;
            ::close(fd);
            return;
        }
        bool over = connections_.size() >= context_.options.max_connections;
        auto conn = std::make_unique<Connection>(context_, fd, over, transparent);
        Connection* ptr = conn.get();
        connections_.emplace(ptr, std::move(conn));
        ++context_.metrics.connections_total;
        context_.metrics.connections_active = connections_.size();
        ptr->start();
    }

    void retire(Connection* c) {
        auto it = connections_.find(c);
        if (it == connections_.end()) return;
        graveyard_.push_back(std::move(it->second));
        connections_.erase(it);
        context_.metrics.connections_active = connections_.size();
        if (!uv_is_active(reinterpret_cast<uv_handle_t*>(reaper_))) {
            uv_check_start(reaper_, [](uv_check_t* h) {
                auto* self = static_cast<ProxyImpl*>(h->data);
                if (!self) return;
                self->graveyard_.clear();
                uv_check_stop(h);
            });
        }
        if (context_.draining && connections_.empty()) finish_shutdown();
    }

    void finish_shutdown() {
        if (!shutdown_done_) return;
        uv_timer_stop(grace_timer_);
        if (metrics_server_) metrics_server_->close();
        if (health_server_) health_server_->close();
        if (context_.audit) context_.audit->flush();
        auto done = std::move(shutdown_done_);
        shutdown_done_ = nullptr;
        done();
    }

    Context context_;
    std::vector<std::unique_ptr<Listener>> listeners_;
    std::unordered_map<Connection*, std::unique_ptr<Connection>> connections_;
    std::vector<std::unique_ptr<Connection>> graveyard_;
    std::unique_ptr<MetricsServer> metrics_server_, health_server_;
    std::unique_ptr<DnsStub> dns_;
    std::vector<std::unique_ptr<Forwarder>> forwards_;
    uv_check_t* reaper_;
    uv_timer_t* grace_timer_;
    std::function<void()> shutdown_done_;
    std::unique_ptr<ControlChannel> control_;
};

}  // namespace

std::unique_ptr<Proxy> Proxy::create(uv_loop_s* loop, policy::PolicyPtr policy, Options options) {
    return std::make_unique<ProxyImpl>(loop, std::move(policy), std::move(options), nullptr);
}

std::unique_ptr<Proxy> Proxy::create(uv_loop_s* loop, policy::PolicyPtr policy, Options options,
                                     std::unique_ptr<Resolver> resolver) {
    return std::make_unique<ProxyImpl>(loop, std::move(policy), std::move(options), std::move(resolver));
}

}  // namespace cordon::proxy
