// The SOCKS5 front-end (socks5_frontend.hpp).
#include "proxy/socks5_frontend.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "proxy/auth.hpp"
#include "proxy/context.hpp"
#include "proxy/socket.hpp"
#include "proxy/socks5.hpp"

namespace cordon::proxy {

void Socks5FrontEnd::read() {
    while (!p_.closed() && p_.phase() == Phase::Reading) {
        if (step_ == Step::Greeting) {
            auto g = socks5::parse_greeting(p_.input());
            if (g.state == socks5::Parse::Incomplete) return;
            if (g.state == socks5::Parse::Invalid) {
                p_.conclude({Verdict::Kind::Rejected, "bad-request", "bad SOCKS5 greeting", 0, ""});
                return;
            }
            p_.input().erase(0, g.consumed);
            auto offers = [&](std::uint8_t m) {
                return std::find(g.methods.begin(), g.methods.end(), m) != g.methods.end();
            };
            std::uint8_t method = socks5::kMethodNone;
            if (!p_.context().options.auth_token.empty()) {
                if (offers(socks5::kMethodUserPass)) method = socks5::kMethodUserPass;
            } else if (offers(socks5::kMethodNoAuth)) {
                method = socks5::kMethodNoAuth;
            } else if (offers(socks5::kMethodUserPass)) {
                method = socks5::kMethodUserPass;  // no token: any credentials will do
            }
            if (method == socks5::kMethodNone) {
                bool open = p_.context().options.auth_token.empty();
                p_.conclude({Verdict::Kind::Rejected, open ? "bad-request" : "proxy-auth-required",
                             open ? "no acceptable SOCKS5 method"
                                  : "SOCKS5 client offered no username/password method",
                             socks5::kMethodNone, ""});
                return;
            }
            p_.send_to_client(std::string{static_cast<char>(socks5::kVersion), static_cast<char>(method)});
            step_ = method == socks5::kMethodUserPass ? Step::Auth : Step::Request;
            continue;
        }
        if (step_ == Step::Auth) {
            auto u = socks5::parse_userpass(p_.input());
            if (u.state == socks5::Parse::Incomplete) return;
            if (u.state == socks5::Parse::Invalid) {
                p_.conclude(
                    {Verdict::Kind::Rejected, "bad-request", "bad SOCKS5 username/password message", 0, ""});
                return;
            }
            p_.input().erase(0, u.consumed);
            bool ok = p_.context().options.auth_token.empty() ||
                      token_matches(u.password, p_.context().options.auth_token);
            if (!ok) {
                p_.conclude({Verdict::Kind::Rejected, "proxy-auth-required", "SOCKS5 authentication failed",
                             0x01, ""});
                return;
            }
            p_.send_to_client(std::string{0x01, 0x00});
            step_ = Step::Request;
            continue;
        }
        if (step_ == Step::Request) {
            auto r = socks5::parse_request(p_.input());
            if (r.state == socks5::Parse::Incomplete) return;
            if (r.state == socks5::Parse::Invalid) {
                p_.request().host = r.host;
                p_.request().port = r.port;
                p_.conclude({Verdict::Kind::Rejected,
                             r.reply == socks5::kCommandNotSupported ? "unsupported-command" : "bad-request",
                             r.error, r.reply, ""});
                return;
            }
            p_.input().erase(0, r.consumed);
            std::string host = r.host;
            if (r.address_type == 0x03) {
                auto parsed = policy::parse_target_host(host, r.port);
                if (auto* why = std::get_if<std::string>(&parsed)) {
                    p_.request().host = host;
                    p_.request().port = r.port;
                    p_.conclude({Verdict::Kind::Rejected, "bad-request", *why, socks5::kGeneralFailure, ""});
                    return;
                }
                host = std::get<policy::HostPort>(parsed).host;
            }
            p_.decide(host, r.port);
            return;
        }
        return;
    }
}

int Socks5FrontEnd::status_for(const Verdict& v) const {
    switch (v.kind) {
        case Verdict::Kind::Denied:
            return socks5::kNotAllowed;
        case Verdict::Kind::Failed:
            return v.error == "connect-refused" ? socks5::kConnectionRefused
                   : v.sys_error == ENETUNREACH ? socks5::kNetworkUnreachable
                                                : socks5::kHostUnreachable;
        case Verdict::Kind::Rejected:
            return socks5::kGeneralFailure;  // over a limit
        case Verdict::Kind::Connected:
        case Verdict::Kind::Aborted:
            break;
    }
    return 0;
}

bool Socks5FrontEnd::needs_client() const {
    // Mid-handshake, or waiting for the reply: a client gone then can use no tunnel.
    return p_.phase() == Phase::Reading || p_.phase() == Phase::Deciding || p_.phase() == Phase::Dialing;
}

void Socks5FrontEnd::answer(const Verdict& v) {
    switch (v.kind) {
        case Verdict::Kind::Connected:
            reply(socks5::kSucceeded, false);
            p_.start_tunnel();
            return;
        case Verdict::Kind::Denied:
            p_.set_error(!p_.request().guard_class.empty()
                             ? "blocked-by-address-guard: " + p_.request().upstream_ip + " (" +
                                   p_.request().guard_class + ")"
                             : v.reason);
            reply(socks5::kNotAllowed, true);
            return;
        case Verdict::Kind::Failed:
        case Verdict::Kind::Rejected:
            break;
        case Verdict::Kind::Aborted:
            return;
    }
    // A refusal or failure: the answer the step in progress has for it, then close.
    std::string error = v.error.empty() ? v.reason : v.error;
    p_.set_error(error);
    if (v.status == 0) {
        p_.close(error);  // unparseable: nothing to answer in
    } else if (step_ == Step::Greeting) {
        p_.send_to_client(
            std::string{static_cast<char>(socks5::kVersion), static_cast<char>(socks5::kMethodNone)});
        p_.finish_after_flush();
    } else if (step_ == Step::Auth) {
        p_.send_to_client(std::string{0x01, static_cast<char>(v.status)});
        p_.finish_after_flush();
    } else {
        reply(static_cast<std::uint8_t>(v.status), true);
    }
}

void Socks5FrontEnd::reply(std::uint8_t code, bool then_close) {
    std::string bound_ip;
    std::uint16_t bound_port = 0;
    if (code == socks5::kSucceeded && p_.has_upstream()) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        if (getsockname(p_.upstream_fd(), reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
            Address a = Address::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len);
            bound_ip = a.ip();
            bound_port = a.port();
        }
    }
    p_.send_to_client(socks5::make_reply(code, bound_ip, bound_port));
    if (then_close) p_.finish_after_flush();
}

}  // namespace cordon::proxy
