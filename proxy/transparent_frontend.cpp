// The transparent front-end (transparent_frontend.hpp).
#include "proxy/transparent_frontend.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <uv.h>

#include <cstring>

#include "proxy/client_hello.hpp"
#include "proxy/context.hpp"
#include "proxy/socket.hpp"

namespace cordon::proxy {

namespace {
// <linux/netfilter_ipv4.h> SO_ORIGINAL_DST and <linux/netfilter_ipv6/ip6_tables.h> IP6T_SO_ORIGINAL_DST (both
// 80); those headers clash with glibc's.
constexpr int kSoOriginalDst = 80;
}  // namespace

TransparentFrontEnd::TransparentFrontEnd(Pipeline& pipeline) : p_(pipeline), timer_(new uv_timer_t) {
    uv_timer_init(p_.context().loop, timer_);
    timer_->data = this;
}

TransparentFrontEnd::~TransparentFrontEnd() {
    timer_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
}

// The original destination, and what it stands for: a name of the DNS stub, or an address as itself.
bool TransparentFrontEnd::find_target() {
    targeted_ = true;
    int fd = p_.client_fd();
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return false;
    sockaddr_storage dst{};
    len = sizeof dst;
    int level = local.ss_family == AF_INET6 ? SOL_IPV6 : SOL_IP;
    if (::getsockopt(fd, level, kSoOriginalDst, &dst, &len) != 0) {
        // Connected to the listener's own address (not redirected): there is no destination to decide.
        refusal_ = "no original destination (not a redirected connection)";
        return false;
    }
    Address a = Address::from_sockaddr(reinterpret_cast<sockaddr*>(&dst), len).unmapped();
    original_dst_ = a.to_string();
    port_ = a.port();
    if (auto name = p_.context().fake.name_for(a)) {
        host_ = *name;
    } else if (FakeAddresses::in_pool(a)) {
        refusal_ = "an address of the DNS stub's pool that it never gave out";
        host_ = a.ip();
        return false;
    } else {
        host_ = a.ip();
    }
    return true;
}

void TransparentFrontEnd::read() {
    if (deciding_ || p_.closed()) return;  // later bytes wait in the connection's buffer for the tunnel
    if (!targeted_ && !find_target()) {
        p_.request().host = host_;
        p_.request().port = port_;
        p_.request().original_dst = original_dst_;
        p_.conclude({Verdict::Kind::Rejected, "bad-request", refusal_, 0, ""});
        return;
    }
    auto hello = client_hello_sni(std::span<const std::uint8_t>(
        reinterpret_cast<const std::uint8_t*>(p_.input().data()), p_.input().size()));
    // Why strict mode waits for the whole ClientHello (up to kStrictFirstBytesMs, kMaxHello) and refuses a
    // TLS connection whose name it cannot read: a hello sent slowly or padded past what is read would
    // otherwise be decided by its address alone, and the handshake then names a host the policy never saw.
    bool tls = !p_.input().empty() && static_cast<unsigned char>(p_.input()[0]) == 0x16;
    if (hello.status == ClientHelloSni::Status::NeedMore && !waited_ && !p_.client_eof()) {
        if (!uv_is_active(reinterpret_cast<uv_handle_t*>(timer_)))
            uv_timer_start(timer_, &TransparentFrontEnd::on_timer,
                           p_.context().options.strict_sni ? kStrictFirstBytesMs : kFirstBytesMs, 0);
        return;
    }
    uv_timer_stop(timer_);
    deciding_ = true;
    p_.request().original_dst = original_dst_;
    p_.request().sni.clear();
    p_.request().sni_mismatch = false;
    p_.request().sni_error.clear();
    if (tls && hello.status != ClientHelloSni::Status::Found) {
        const std::uint64_t waited = p_.context().options.strict_sni ? kStrictFirstBytesMs : kFirstBytesMs;
        switch (hello.status) {
            case ClientHelloSni::Status::NeedMore:
                p_.request().sni_error =
                    p_.client_eof() ? "ClientHello cut short by the client's close"
                                    : "ClientHello incomplete after " + std::to_string(waited) + " ms";
                break;
            case ClientHelloSni::Status::TooLarge:
                p_.request().sni_error =
                    "ClientHello over " + std::to_string(ClientHelloSni::kMaxHello) + " bytes";
                break;
            case ClientHelloSni::Status::NoSni:
                p_.request().sni_error = "ClientHello without a server name";
                break;
            default:
                p_.request().sni_error = "malformed ClientHello";
                break;
        }
        if (p_.context().options.strict_sni) {
            p_.request().host = host_;
            p_.request().port = port_;
            p_.conclude({Verdict::Kind::Rejected, "sni-unreadable",
                         p_.request().sni_error + ": the TLS server name is required (--strict-sni)", 0, ""});
            return;
        }
    }
    if (hello.status == ClientHelloSni::Status::Found) {
        p_.request().sni = hello.name;
        p_.request().sni_mismatch = hello.name != host_;
        if (p_.request().sni_mismatch && p_.context().options.strict_sni) {
            p_.request().host = host_;
            p_.request().port = port_;
            p_.conclude({Verdict::Kind::Rejected, "sni-mismatch",
                         "TLS server name " + hello.name + " is not " + host_ + " (--strict-sni)", 0, ""});
            return;
        }
    }
    p_.decide(host_, port_);
}

void TransparentFrontEnd::on_timer(uv_timer_t* timer) {
    auto* self = static_cast<TransparentFrontEnd*>(timer->data);
    if (!self) return;
    self->waited_ = true;
    self->read();
}

void TransparentFrontEnd::answer(const Verdict& v) {
    switch (v.kind) {
        case Verdict::Kind::Connected:
            p_.start_tunnel();
            return;
        case Verdict::Kind::Aborted:
            return;
        case Verdict::Kind::Denied:
        case Verdict::Kind::Failed:
        case Verdict::Kind::Rejected:
            break;
    }
    // No protocol to answer in: reset the connection, so the client fails at once (ECONNRESET) rather than
    // reading an orderly end it might take for an empty answer.
    linger reset{1, 0};
    ::setsockopt(p_.client_fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    std::string error = v.error.empty() ? v.reason : v.error;
    if (!p_.request().guard_class.empty())
        error =
            "blocked-by-address-guard: " + p_.request().upstream_ip + " (" + p_.request().guard_class + ")";
    p_.close(error);
}

}  // namespace cordon::proxy
