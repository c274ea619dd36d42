// The parent proxy (parent_proxy.hpp).
#include "proxy/parent_proxy.hpp"

#include <cstring>

#include "policy/policy.hpp"
#include "policy/syntax.hpp"
#include "proxy/auth.hpp"

namespace cordon::proxy {

namespace {

std::string percent_decode(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size()) {
            out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

}  // namespace

std::variant<ParentProxy, std::string> ParentProxy::parse(std::string_view url, std::string_view no_proxy) {
    ParentProxy p;
    std::string_view rest = url;
    if (rest.substr(0, 7) == "http://") {
        rest.remove_prefix(7);
    } else if (rest.find("://") != std::string_view::npos) {
        return "parent proxy '" + std::string(url) + "': only http:// proxies are supported";
    }
    if (auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
    if (auto at = rest.rfind('@'); at != std::string_view::npos) {
        try {
            p.authorization = "Basic " + base64_encode(percent_decode(rest.substr(0, at)));
        } catch (const std::exception&) {
            return "parent proxy: bad percent-encoding in the user info";
        }
        rest.remove_prefix(at + 1);
    }
    auto split = policy::split_host_port(rest, policy::PortSpec::Optional);
    if (auto* why = std::get_if<std::string>(&split))
        return "parent proxy '" + std::string(url) + "': " + *why;
    const auto& hp = std::get<policy::HostPortText>(split);
    p.port = hp.port.value_or(3128);
    auto host = policy::parse_target_host(hp.host, p.port);
    if (auto* why = std::get_if<std::string>(&host))
        return "parent proxy '" + std::string(url) + "': " + *why;
    p.host = std::get<policy::HostPort>(host).host;
    std::size_t start = 0;
    while (start <= no_proxy.size()) {
        std::size_t comma = std::min(no_proxy.find(',', start), no_proxy.size());
        std::string entry(no_proxy.substr(start, comma - start));
        entry.erase(0, entry.find_first_not_of(" \t"));
        entry.erase(entry.find_last_not_of(" \t") + 1);
        if (entry.substr(0, 2) == "*.") entry.erase(0, 1);
        if (!entry.empty()) {
            for (auto& c : entry)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            p.no_proxy.push_back(entry);
        }
        start = comma + 1;
    }
    return p;
}

bool ParentProxy::applies(std::string_view target) const {
    for (const auto& e : no_proxy) {
        if (e == "*") return false;
        if (e[0] == '.') {
            std::string_view bare = std::string_view(e).substr(1);
            if (target == bare || (target.size() > e.size() && target.substr(target.size() - e.size()) == e))
                return false;
        } else if (target == e || (target.size() > e.size() && target.substr(target.size() - e.size()) == e &&
                                   target[target.size() - e.size() - 1] == '.')) {
            return false;
        }
    }
    return true;
}

ParentHandshake::ParentHandshake(Socket& socket, const ParentProxy& parent, const std::string& host,
                                 std::uint16_t port, Done done)
    : socket_(socket), done_(std::move(done)) {
    std::string authority =
        (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
    std::string request = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n";
    if (!parent.authorization.empty()) request += "Proxy-Authorization: " + parent.authorization + "\r\n";
    request += "\r\n";
    socket_.set_owner(this);
    socket_.send(request);
    socket_.want_read(true);
}

void ParentHandshake::on_readable(Socket& socket) {
    // Byte by byte up to the end of the head: what follows belongs to the tunnel (the target speaks first in
    // some protocols), so nothing past the head may be read here.
    char c;
    for (;;) {
        long n = socket.read(&c, 1);
        if (n == -1) return;
        if (n <= 0) {
            socket.want_read(false);
            auto done = std::move(done_);
            done(n == 0 ? "parent-proxy: closed before answering"
                        : "parent-proxy: " + std::string(std::strerror(socket.error())));
            return;
        }
        answer_ += c;
        if (answer_.size() > 16384) {
            socket.want_read(false);
            auto done = std::move(done_);
            done("parent-proxy: answer head too long");
            return;
        }
        if (answer_.size() >= 4 && answer_.compare(answer_.size() - 4, 4, "\r\n\r\n") == 0) break;
    }
    socket.want_read(false);
    std::string status_line = answer_.substr(0, answer_.find("\r\n"));
    auto done = std::move(done_);
    // "HTTP/1.1 200 Connection established"
    auto sp = status_line.find(' ');
    if (sp != std::string::npos && status_line.size() > sp + 1 && status_line[sp + 1] == '2') {
        done("");
        return;
    }
    done("parent-proxy: " + status_line.substr(sp == std::string::npos ? 0 : sp + 1, 80));
}

void ParentHandshake::on_error(Socket&, int error) {
    if (!done_) return;
    auto done = std::move(done_);
    done("parent-proxy: " + std::string(std::strerror(error)));
}

}  // namespace cordon::proxy
