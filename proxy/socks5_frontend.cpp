// The SOCKS5 front-end of a connection: method negotiation (no auth, or username/password when --auth-token
// is set), the CONNECT request, and replies. BIND and UDP ASSOCIATE are answered 0x07, unknown address types
// 0x08, policy and guard refusals 0x02. Works however the client splits its bytes.
#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "proxy/auth.hpp"
#include "proxy/connection.hpp"
#include "proxy/context.hpp"
#include "proxy/socks5.hpp"

namespace cordon::proxy {

void Connection::socks_process() {
    while (!closed()) {
        if (socks_step_ == SocksStep::Greeting) {
            auto g = socks5::parse_greeting(in_);
            if (g.state == socks5::Parse::Incomplete) return;
            if (g.state == socks5::Parse::Invalid) {
                conclude({Verdict::Kind::Rejected, "bad-request", "bad SOCKS5 greeting", 0, ""});
                return;
            }
            in_.erase(0, g.consumed);
            auto offers = [&](std::uint8_t m) {
                return std::find(g.methods.begin(), g.methods.end(), m) != g.methods.end();
            };
            std::uint8_t method = socks5::kMethodNone;
            if (!context_.options.auth_token.empty()) {
                if (offers(socks5::kMethodUserPass)) method = socks5::kMethodUserPass;
            } else if (offers(socks5::kMethodNoAuth)) {
                method = socks5::kMethodNoAuth;
            } else if (offers(socks5::kMethodUserPass)) {
                method = socks5::kMethodUserPass;  // no token: any credentials will do
            }
            if (method == socks5::kMethodNone) {
                bool open = context_.options.auth_token.empty();
                conclude({Verdict::Kind::Rejected, open ? "bad-request" : "proxy-auth-required",
                          open ? "no acceptable SOCKS5 method"
                               : "SOCKS5 client offered no username/password method",
                          socks5::kMethodNone, ""});
                return;
            }
            client_->send(std::string{static_cast<char>(socks5::kVersion), static_cast<char>(method)});
            socks_step_ = method == socks5::kMethodUserPass ? SocksStep::Auth : SocksStep::Request;
            continue;
        }
        if (socks_step_ == SocksStep::Auth) {
            auto u = socks5::parse_userpass(in_);
            if (u.state == socks5::Parse::Incomplete) return;
            if (u.state == socks5::Parse::Invalid) {
                conclude(
                    {Verdict::Kind::Rejected, "bad-request", "bad SOCKS5 username/password message", 0, ""});
                return;
            }
            in_.erase(0, u.consumed);
            bool ok =
                context_.options.auth_token.empty() || token_matches(u.password, context_.options.auth_token);
            if (!ok) {
                conclude({Verdict::Kind::Rejected, "proxy-auth-required", "SOCKS5 authentication failed",
                          0x01, ""});
                return;
            }
            client_->send(std::string{0x01, 0x00});
            socks_step_ = SocksStep::Request;
            continue;
        }
        if (socks_step_ == SocksStep::Request) {
            auto r = socks5::parse_request(in_);
            if (r.state == socks5::Parse::Incomplete) return;
            if (r.state == socks5::Parse::Invalid) {
                request_.host = r.host;
                request_.port = r.port;
                conclude({Verdict::Kind::Rejected,
                          r.reply == socks5::kCommandNotSupported ? "unsupported-command" : "bad-request",
                          r.error, r.reply, ""});
                return;
            }
            in_.erase(0, r.consumed);
            std::string host = r.host;
            if (r.address_type == 0x03) {
                std::string normal;
                auto parsed =
                    policy::parse_target((host.find(':') != std::string::npos ? "[" + host + "]" : host) +
                                             ":" + std::to_string(r.port),
                                         r.port);
                if (auto* why = std::get_if<std::string>(&parsed);
                    why || host.find_first_of("/@?#\\ ") != std::string::npos) {
                    request_.host = host;
                    request_.port = r.port;
                    conclude({Verdict::Kind::Rejected, "bad-request", why ? *why : "bad domain name",
                              socks5::kGeneralFailure, ""});
                    return;
                }
                host = std::get<policy::HostPort>(parsed).host;
            }
            decide(host, r.port);
            return;
        }
        return;
    }
}

void Connection::socks_reply(std::uint8_t code, bool then_close) {
    std::string bound_ip;
    std::uint16_t bound_port = 0;
    if (code == socks5::kSucceeded && upstream_) {
        sockaddr_storage ss{};
        socklen_t len = sizeof ss;
        if (getsockname(upstream_->fd(), reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
            Address a = Address::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len);
            bound_ip = a.ip();
            bound_port = a.port();
        }
    }
    client_->send(socks5::make_reply(code, bound_ip, bound_port));
    if (then_close) finish_after_flush();
}

void Connection::socks_refuse() {
    error_ = !request_.guard_class.empty()
                 ? "blocked-by-address-guard: " + request_.upstream_ip + " (" + request_.guard_class + ")"
                 : std::string(policy::to_string(decision_.last().reason));
    socks_reply(socks5::kNotAllowed, true);
}

void Connection::socks_reject(const Verdict& v) {
    // The answer the SOCKS5 step in progress has for a refusal; then close.
    error_ = v.error.empty() ? v.reason : v.error;
    if (v.status == 0) {
        close(error_);  // unparseable: nothing to answer in
    } else if (socks_step_ == SocksStep::Greeting) {
        client_->send(
            std::string{static_cast<char>(socks5::kVersion), static_cast<char>(socks5::kMethodNone)});
        finish_after_flush();
    } else if (socks_step_ == SocksStep::Auth) {
        client_->send(std::string{0x01, static_cast<char>(v.status)});
        finish_after_flush();
    } else {
        socks_reply(static_cast<std::uint8_t>(v.status), true);
    }
}

void Connection::socks_connected() {
    socks_reply(socks5::kSucceeded, false);
    start_tunnel();
}

}  // namespace cordon::proxy
