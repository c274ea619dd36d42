#include "proxy/metrics.hpp"

#include <uv.h>

#include <cstdio>
#include <set>
#include <stdexcept>

#include "policy/syntax.hpp"
#include "proxy/address_guard.hpp"
#include "proxy/audit_log.hpp"

namespace cordon::proxy {

bool split_host_port(const std::string& text, std::string& ip, std::uint16_t& port) {
    // The one host:port grammar (policy/syntax.hpp); a listen address also takes port 0.
    auto parts = policy::split_host_port(text, policy::PortSpec::RequiredOrZero);
    if (std::holds_alternative<std::string>(parts)) return false;
    const auto& hp = std::get<policy::HostPortText>(parts);
    std::string host(hp.host);
    if (!hp.bracketed && host.find(':') != std::string::npos) return false;  // IPv6 needs brackets
    if (host == "localhost") host = "127.0.0.1";
    if (!Address::parse(host)) return false;
    ip = host;
    port = *hp.port;
    return true;
}

void Metrics::observe_dns(std::chrono::microseconds latency) {
    double seconds = static_cast<double>(latency.count()) / 1e6;
    for (std::size_t i = 0; i < kDnsBuckets.size(); ++i) {
        if (seconds <= kDnsBuckets[i]) ++dns_bucket_counts[i];
    }
    ++dns_count;
    dns_sum += seconds;
}

namespace {
std::string label_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '\\' || c == '"') out.push_back('\\');
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out.push_back(c);
    }
    return out;
}
}  // namespace

std::string Metrics::render() const {
    std::string out;
    char line[256];
    out += "# HELP cordon_requests_total Requests decided, by protocol, decision and reason.\n";
    out += "# TYPE cordon_requests_total counter\n";
    for (const auto& [key, count] : requests) {
        const auto& [proto, decision, reason] = key;
        out += "cordon_requests_total{proto=\"" + label_escape(proto) + "\",decision=\"" +
               label_escape(decision) + "\",reason=\"" + label_escape(reason) + "\"} " +
               std::to_string(count) + "\n";
    }
    out +=
        "# HELP cordon_would_refuse_total Connections the policy refused that report-only let through, by "
        "reason.\n";
    out += "# TYPE cordon_would_refuse_total counter\n";
    for (const auto& [reason, count] : would_refuse)
        out += "cordon_would_refuse_total{reason=\"" + label_escape(reason) + "\"} " + std::to_string(count) +
               "\n";
    auto simple = [&](const char* name, const char* type, const char* help, std::uint64_t value) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name +
               " " + std::to_string(value) + "\n";
    };
    simple("cordon_connections_active", "gauge", "Client connections open now.", connections_active);
    simple("cordon_connections_total", "counter", "Client connections accepted.", connections_total);
    simple("cordon_connections_rejected_total", "counter", "Connections refused over --max-connections.",
           connections_rejected);
    simple("cordon_tls_leaves_minted_total", "counter", "Leaf certificates minted for inspected hosts.",
           tls_leaves_minted);
    out += "# HELP cordon_bytes_total Bytes relayed, by direction (up = client to upstream).\n";
    out += "# TYPE cordon_bytes_total counter\n";
    out += "cordon_bytes_total{direction=\"up\"} " + std::to_string(bytes_up) + "\n";
    out += "cordon_bytes_total{direction=\"down\"} " + std::to_string(bytes_down) + "\n";
    out += "# HELP cordon_policy_reloads_total Policy reloads (SIGHUP), by result.\n";
    out += "# TYPE cordon_policy_reloads_total counter\n";
    out += "cordon_policy_reloads_total{result=\"ok\"} " + std::to_string(policy_reloads) + "\n";
    out += "cordon_policy_reloads_total{result=\"error\"} " + std::to_string(policy_reload_failures) + "\n";
    simple("cordon_dns_cache_hits_total", "counter", "Names answered from the DNS cache.", dns_cache_hits);
    out += "# HELP cordon_dns_lookup_seconds DNS lookup latency (cache misses).\n";
    out += "# TYPE cordon_dns_lookup_seconds histogram\n";
    for (std::size_t i = 0; i < kDnsBuckets.size(); ++i) {
        std::snprintf(line, sizeof line, "cordon_dns_lookup_seconds_bucket{le=\"%g\"} %llu\n", kDnsBuckets[i],
                      static_cast<unsigned long long>(dns_bucket_counts[i]));
        out += line;
    }
    out += "cordon_dns_lookup_seconds_bucket{le=\"+Inf\"} " + std::to_string(dns_count) + "\n";
    std::snprintf(line, sizeof line, "cordon_dns_lookup_seconds_sum %.6f\n", dns_sum);
    out += line;
    out += "cordon_dns_lookup_seconds_count " + std::to_string(dns_count) + "\n";
    out +=
        "# HELP cordon_audit_dropped_total Audit lines lost, by reason: queue-full (the log's reader did not "
        "keep up), unwritten (a write failed, or the reader stopped taking lines at exit).\n";
    out += "# TYPE cordon_audit_dropped_total counter\n";
    out += "cordon_audit_dropped_total{reason=\"queue-full\"} " +
           std::to_string(audit ? audit->dropped_queue_full() : 0) + "\n";
    out += "cordon_audit_dropped_total{reason=\"unwritten\"} " +
           std::to_string(audit ? audit->dropped_unwritten() : 0) + "\n";
    return out;
}

namespace {

// A scrape is one short request: clients are few (kMaxClients, more are closed at accept) and brief (closed
// after kIdleMs without a complete request).
constexpr std::size_t kMaxClients = 64;
constexpr std::uint64_t kIdleMs = 10'000;

class UvMetricsServer;

struct Client {
    uv_tcp_t tcp;
    uv_timer_t timer;
    UvMetricsServer* server = nullptr;
    std::string request;
    std::string response;
    uv_write_t write;
    bool answered = false;
    bool closing = false;
    int handles = 2;  // tcp and timer: freed when both are closed
};

class UvMetricsServer final : public MetricsServer {
  public:
    UvMetricsServer(uv_loop_t* loop, const std::string& address, const Metrics& metrics, bool health_only)
        : metrics_(metrics), health_only_(health_only) {
        const char* flag = health_only ? "--health" : "--metrics";
        std::string ip;
        std::uint16_t port = 0;
        if (!split_host_port(address, ip, port))
            throw std::runtime_error(std::string("bad ") + flag + " address '" + address +
                                     "' (expected ADDR:PORT)");
        auto a = Address::parse(ip, port);
        server_ = new uv_tcp_t;
        uv_tcp_init(loop, server_);
        server_->data = this;
        int rc = uv_tcp_bind(server_, a->sa(), 0);
        if (rc == 0)
            rc = uv_listen(reinterpret_cast<uv_stream_t*>(server_), 128, &UvMetricsServer::on_connection);
        if (rc != 0) {
            close();
            throw std::runtime_error(std::string("cannot listen for ") +
                                     (health_only ? "health checks" : "metrics") + " on " + address + ": " +
                                     uv_strerror(rc));
        }
        sockaddr_storage ss{};
        int len = sizeof ss;
        uv_tcp_getsockname(server_, reinterpret_cast<sockaddr*>(&ss), &len);
        port_ = Address::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), static_cast<socklen_t>(len)).port();
    }
    ~UvMetricsServer() override { close(); }

    std::uint16_t port() const override { return port_; }
    void close() override {
        auto clients = clients_;
        for (Client* c : clients)
            close_client(c);
        if (!server_) return;
        server_->data = nullptr;
        uv_close(reinterpret_cast<uv_handle_t*>(server_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_tcp_t*>(h); });
        server_ = nullptr;
    }

  private:
    static void close_client(Client* c) {
        if (c->closing) return;
        c->closing = true;
        if (c->server) c->server->clients_.erase(c);
        c->server = nullptr;
        auto freed = [](uv_handle_t* h) {
            auto* client = static_cast<Client*>(h->data);
            if (--client->handles == 0) delete client;
        };
        uv_close(reinterpret_cast<uv_handle_t*>(&c->timer), freed);
        uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), freed);
    }
    static void on_connection(uv_stream_t* server, int status) {
        auto* self = static_cast<UvMetricsServer*>(server->data);
        if (status < 0 || !self) return;
        auto* c = new Client;
        uv_tcp_init(server->loop, &c->tcp);
        uv_timer_init(server->loop, &c->timer);
        c->tcp.data = c;
        c->timer.data = c;
        if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->tcp)) != 0 ||
            self->clients_.size() >= kMaxClients) {
            close_client(c);
            return;
        }
        c->server = self;
        self->clients_.insert(c);
        uv_timer_start(
            &c->timer, [](uv_timer_t* t) { close_client(static_cast<Client*>(t->data)); }, kIdleMs, 0);
        uv_read_start(
            reinterpret_cast<uv_stream_t*>(&c->tcp),
            [](uv_handle_t*, size_t, uv_buf_t* buf) {
                static char scratch[4096];
                *buf = uv_buf_init(scratch, sizeof scratch);
            },
            &UvMetricsServer::on_read);
    }
    static void on_read(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
        auto* c = static_cast<Client*>(stream->data);
        if (n < 0) {
            close_client(c);
            return;
        }
        c->request.append(buf->base, static_cast<std::size_t>(n));
        if (c->answered) return;
        if (c->request.size() > 8192) {
            close_client(c);
            return;
        }
        if (c->request.find("\r\n\r\n") == std::string::npos && c->request.find("\n\n") == std::string::npos)
            return;
        c->answered = true;
        uv_read_stop(stream);
        c->response = c->server ? c->server->answer(c->request) : std::string();
        uv_buf_t out = uv_buf_init(c->response.data(), static_cast<unsigned>(c->response.size()));
        uv_write(&c->write, stream, &out, 1,
                 [](uv_write_t* w, int) { close_client(static_cast<Client*>(w->handle->data)); });
    }

    // The response to one request: /healthz, /readyz, otherwise the metrics (404 on a --health listener).
    std::string answer(const std::string& request) const {
        std::string path;
        auto space = request.find(' ');
        if (space != std::string::npos) {
            auto end = request.find_first_of(" ?\r\n", space + 1);
            path = request.substr(space + 1, end == std::string::npos ? std::string::npos : end - space - 1);
        }
        std::string status = "200 OK", type = "text/plain; charset=utf-8", body;
        if (path == "/healthz") {
            body = "ok\n";
        } else if (path == "/readyz") {
            if (metrics_.draining) {
                status = "503 Service Unavailable";
                body = "draining\n";
            } else if (metrics_.listeners == 0) {
                status = "503 Service Unavailable";
                body = "not listening\n";
            } else if (metrics_.report_only) {
                body = "ready (report-only: refusals by the policy are logged, not enforced)\n";
            } else {
                body = "ready\n";
            }
        } else if (health_only_) {
            status = "404 Not Found";
            body = "/healthz or /readyz\n";
        } else {
            type = "text/plain; version=0.0.4";
            body = metrics_.render();
        }
        return "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
               "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    }

    const Metrics& metrics_;
    bool health_only_;
    std::set<Client*> clients_;
    uv_tcp_t* server_ = nullptr;
    std::uint16_t port_ = 0;
};

}  // namespace

std::unique_ptr<MetricsServer> MetricsServer::create(uv_loop_s* loop, const std::string& address,
                                                     const Metrics& metrics, bool health_only) {
    return std::make_unique<UvMetricsServer>(loop, address, metrics, health_only);
}

}  // namespace cordon::proxy
