// The jail's DNS stub (dns_stub.hpp).
#include "proxy/dns_stub.hpp"

#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "policy/host_name.hpp"
#include "proxy/context.hpp"
#include "proxy/decision.hpp"
#include "proxy/decision_log.hpp"

namespace cordon::proxy {

namespace {

constexpr std::uint32_t kTtl = 60;            // the mapping holds for the whole run; short is harmless
constexpr std::size_t kMaxTcpClients = 64;    // beyond, new TCP clients are closed at once
constexpr std::uint64_t kTcpIdleMs = 10'000;  // a TCP client silent this long is closed
constexpr std::size_t kMaxTcpBuffer = 2 + 65535;

const char* rcode_name(std::uint8_t rcode) {
    switch (rcode) {
        case dns::kNoError:
            return "NOERROR";
        case dns::kServFail:
            return "SERVFAIL";
        case dns::kNxDomain:
            return "NXDOMAIN";
        case dns::kNotImp:
            return "NOTIMP";
        case dns::kRefused:
            return "REFUSED";
    }
    return "OTHER";
}

std::vector<std::uint8_t> address_bytes(const Address& a) {
    if (a.family() == AF_INET) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(
            &reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr);
        return {p, p + 4};
    }
    const auto* p = reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr.s6_addr;
    return {p, p + 16};
}

}  // namespace

std::vector<std::uint8_t> DnsStub::answer(std::span<const std::uint8_t> message, const char* proto) {
    auto query = dns::parse_dns_query(message);
    if (!query) {
        ++context_.metrics.dns_malformed;
        return {};
    }
    DnsEvent e;
    e.id = context_.next_id++;
    e.proto = proto;
    e.host = query->name;
    e.qtype = dns::type_name(query->type);
    std::uint8_t rcode = dns::kNoError;
    std::vector<std::vector<std::uint8_t>> answers;
    policy::Decision d;
    if (query->opcode() != 0) {
        rcode = dns::kNotImp;
        e.reason = "bad-request";
    } else {
        // The name as the policy reads it (case, IDN): an invalid name, or an IP literal asked for as a name,
        // is no name the jail can reach.
        auto parsed = policy::parse_target_host(query->name, 53);
        const auto* host = std::get_if<policy::HostPort>(&parsed);
        bool literal = host && Address::parse(host->host).has_value();
        if (host && !literal) {
            e.host = host->host;
            d = DecisionPoint(context_).decide_name(host->host);
        }
        e.reason = std::string(policy::to_string(d.reason));
        if (!d.allowed()) {
            rcode = dns::kNxDomain;
            // The lookup is what the jail sees refused (it never connects): it counts in the summary.
            auto& entry = count_refused(context_, e.host + " (DNS)", "(other names) (DNS)");
            entry.why = d.reason == policy::Reason::BlockedByDenylist ? RefusalSummary::Why::DeniedByRule
                                                                      : RefusalSummary::Why::NotAllowed;
            entry.rule = rule_text(d);
            entry.source = rule_source(d);
            entry.reason_text = reason_text(d);
        } else if (query->klass == dns::kClassIN &&
                   (query->type == dns::kTypeA || query->type == dns::kTypeAAAA)) {
            auto fake = context_.fake.assign(e.host, query->type == dns::kTypeA ? AF_INET : AF_INET6);
            if (!fake) {
                rcode = dns::kServFail;
            } else {
                e.answer = fake->ip();
                answers.push_back(address_bytes(*fake));
            }
        }
    }
    e.decision = d.allowed() ? "allow" : "deny";
    e.rule = rule_text(d);
    e.source = rule_source(d);
    e.rcode = rcode_name(rcode);
    record_decision(context_, e);
    return dns::make_dns_answer(*query, rcode, answers, kTtl);
}

// ---- UDP

struct DnsStub::Udp {
    DnsStub* stub;
    uv_udp_t handle;
    char buffer[4096];
};

// ---- TCP: each message and answer with a 2-byte length (RFC 1035 4.2.2)

struct DnsStub::TcpListener {
    DnsStub* stub;
    uv_tcp_t handle;
};

// Registered with the stub while open: the stub closes every client when it closes, so none outlives it.
struct DnsStub::TcpClient {
    DnsStub* stub;
    uv_tcp_t handle;
    uv_timer_t timer;
    std::string in;
    int open_handles = 2;
    bool closing = false;

    static void on_idle(uv_timer_t* timer) { static_cast<TcpClient*>(timer->data)->close(); }

    void close() {
        if (closing) return;
        closing = true;
        stub->tcp_clients_.erase(this);
        auto done = [](uv_handle_t* h) {
            auto* self = static_cast<TcpClient*>(h->data);
            if (--self->open_handles == 0) delete self;
        };
        uv_close(reinterpret_cast<uv_handle_t*>(&handle), done);
        uv_close(reinterpret_cast<uv_handle_t*>(&timer), done);
    }

    void process() {
        while (in.size() >= 2) {
            std::size_t length = static_cast<unsigned char>(in[0]) << 8 | static_cast<unsigned char>(in[1]);
            if (in.size() < 2 + length) return;
            auto out = stub->answer(
                std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(in.data()) + 2, length),
                "tcp");
            in.erase(0, 2 + length);
            if (out.empty()) {  // malformed: this client gets nothing more
                close();
                return;
            }
            struct Write {
                uv_write_t req;
                std::string data;
            };
            auto* w = new Write;
            w->data.push_back(static_cast<char>(out.size() >> 8));
            w->data.push_back(static_cast<char>(out.size()));
            w->data.append(reinterpret_cast<const char*>(out.data()), out.size());
            uv_buf_t buf = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
            if (uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&handle), &buf, 1,
                         [](uv_write_t* req, int) { delete reinterpret_cast<Write*>(req); }) != 0) {
                delete w;
                close();
                return;
            }
        }
    }
};

DnsStub::~DnsStub() {
    close();
}

void DnsStub::close() {
    for (TcpClient* c : std::vector<TcpClient*>(tcp_clients_.begin(), tcp_clients_.end()))
        c->close();
    for (Udp* u : udp_)
        uv_close(reinterpret_cast<uv_handle_t*>(&u->handle),
                 [](uv_handle_t* h) { delete static_cast<Udp*>(h->data); });
    udp_.clear();
    for (TcpListener* t : tcp_)
        uv_close(reinterpret_cast<uv_handle_t*>(&t->handle),
                 [](uv_handle_t* h) { delete static_cast<TcpListener*>(h->data); });
    tcp_.clear();
}

void DnsStub::serve(int fd) {
    int type = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
        ::close(fd);
        throw std::runtime_error("DNS stub: not a socket");
    }
    if (type == SOCK_DGRAM) {
        auto* u = new Udp{this, {}, {}};
        uv_udp_init(context_.loop, &u->handle);
        u->handle.data = u;
        if (uv_udp_open(&u->handle, fd) != 0) {
            ::close(fd);
            uv_close(reinterpret_cast<uv_handle_t*>(&u->handle),
                     [](uv_handle_t* h) { delete static_cast<Udp*>(h->data); });
            throw std::runtime_error("DNS stub: cannot watch the UDP socket");
        }
        udp_.push_back(u);
        uv_udp_recv_start(
            &u->handle,
            [](uv_handle_t* h, std::size_t, uv_buf_t* buf) {
                auto* self = static_cast<Udp*>(h->data);
                *buf = uv_buf_init(self->buffer, sizeof self->buffer);
            },
            [](uv_udp_t* h, ssize_t n, const uv_buf_t* buf, const sockaddr* from, unsigned flags) {
                auto* self = static_cast<Udp*>(h->data);
                // A truncated datagram is malformed: dropped like any other.
                if (n <= 0 || !from || (flags & UV_UDP_PARTIAL)) return;
                auto out = self->stub->answer(
                    std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(buf->base),
                                                  static_cast<std::size_t>(n)),
                    "udp");
                if (out.empty()) return;
                uv_buf_t reply =
                    uv_buf_init(reinterpret_cast<char*>(out.data()), static_cast<unsigned>(out.size()));
                uv_udp_try_send(h, &reply, 1, from);  // a full socket buffer drops it; the client retries
            });
        return;
    }
    auto* t = new TcpListener{this, {}};
    uv_tcp_init(context_.loop, &t->handle);
    t->handle.data = t;
    if (uv_tcp_open(&t->handle, fd) != 0 ||
        uv_listen(reinterpret_cast<uv_stream_t*>(&t->handle), 128, [](uv_stream_t* server, int status) {
            auto* listener = static_cast<TcpListener*>(server->data);
            if (status < 0) return;
            DnsStub* stub = listener->stub;
            auto* c = new TcpClient{stub, {}, {}, {}, 2, false};
            uv_tcp_init(server->loop, &c->handle);
            uv_timer_init(server->loop, &c->timer);
            c->handle.data = c;
            c->timer.data = c;
            stub->tcp_clients_.insert(c);
            if (uv_accept(server, reinterpret_cast<uv_stream_t*>(&c->handle)) != 0 ||
                stub->tcp_clients_.size() > kMaxTcpClients) {
                c->close();
                return;
            }
            uv_timer_start(&c->timer, &TcpClient::on_idle, kTcpIdleMs, 0);
            uv_read_start(
                reinterpret_cast<uv_stream_t*>(&c->handle),
                [](uv_handle_t*, std::size_t, uv_buf_t* buf) {
                    static char scratch[16384];
                    *buf = uv_buf_init(scratch, sizeof scratch);
                },
                [](uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
                    auto* self = static_cast<TcpClient*>(stream->data);
                    if (n < 0) {
                        self->close();
                        return;
                    }
                    if (n == 0 || self->closing) return;
                    self->in.append(buf->base, static_cast<std::size_t>(n));
                    if (self->in.size() > kMaxTcpBuffer) {
                        self->close();
                        return;
                    }
                    uv_timer_start(&self->timer, &TcpClient::on_idle, kTcpIdleMs, 0);
                    self->process();
                });
        }) != 0) {
        uv_close(reinterpret_cast<uv_handle_t*>(&t->handle),
                 [](uv_handle_t* h) { delete static_cast<TcpListener*>(h->data); });
        throw std::runtime_error("DNS stub: cannot watch the TCP socket");
    }
    tcp_.push_back(t);
}

}  // namespace cordon::proxy
