#include "proxy/forward.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "proxy/address_guard.hpp"
#include "proxy/decision_log.hpp"
#include "proxy/relay.hpp"
#include "proxy/socket.hpp"

namespace cordon::proxy {

class ForwardConnection final : public SocketOwner {
  public:
    ForwardConnection(Forwarder& owner, int client_fd)
        : owner_(owner),
          context_(owner.context()),
          id_(context_.next_id++),
          started_(std::chrono::steady_clock::now()),
          client_(std::make_unique<Socket>(context_.loop, client_fd, this)),
          timer_(new uv_timer_t) {
        sockaddr_storage peer{};
        socklen_t len = sizeof peer;
        if (::getpeername(client_fd, reinterpret_cast<sockaddr*>(&peer), &len) == 0)
            peer_ = Address::from_sockaddr(reinterpret_cast<sockaddr*>(&peer), len).unmapped().to_string();
        uv_timer_init(context_.loop, timer_);
        timer_->data = this;
    }

    ~ForwardConnection() override {
        *alive_ = false;
        if (!closed_) close("shutdown");
        timer_->data = nullptr;
        uv_close(reinterpret_cast<uv_handle_t*>(timer_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    }

    void start() {
        last_activity_ = uv_now(context_.loop);
        const auto ms = static_cast<std::uint64_t>(
            std::min(context_.options.idle_timeout, context_.options.connect_timeout).count());
        uv_timer_start(timer_, &ForwardConnection::on_timer, ms ? ms : 1, ms ? ms : 1);
        try_target();
    }

    // The client's socket waits unread until the relay starts (the kernel holds its first bytes); the
    // upstream's answers the connect.
    void on_readable(Socket&) override {}
    void on_writable(Socket& socket) override {
        if (&socket != upstream_.get() || relay_) return;
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        upstream_->want_write(false);
        if (err != 0) {
            next_target(err);
            return;
        }
        connected();
    }
    void on_error(Socket& socket, int error) override {
        if (&socket == upstream_.get() && !relay_) {  // the connect failed
            next_target(error);
            return;
        }
        close(std::strerror(error));
    }

  private:
    const std::vector<std::string>& targets() const { return owner_.forward().targets; }

    void try_target() {
        if (closed_) return;
        if (index_ >= targets().size()) {
            fail(last_error_ ? last_error_ : ECONNREFUSED);
            return;
        }
        std::string ip;
        std::uint16_t port = 0;
        const std::string& text = targets()[index_];
        const auto colon = text.rfind(':');
        ip = text.substr(0, colon);
        if (!ip.empty() && ip.front() == '[') ip = ip.substr(1, ip.size() - 2);
        port = static_cast<std::uint16_t>(std::stoi(text.substr(colon + 1)));
        auto address = Address::parse(ip, port);
        if (!address) {
            fail(EINVAL);
            return;
        }
        target_ = *address;
        auto with_socket = [this, alive = alive_](int fd) {
            if (!*alive) {
                if (fd >= 0) ::close(fd);
                return;
            }
            if (closed_) {
                if (fd >= 0) ::close(fd);
                return;
            }
            if (fd < 0) {
                next_target(-fd);
                return;
            }
            dial(fd);
        };
        if (const auto& make = owner_.forward().make_socket) {
            make(target_.family(), with_socket);
        } else {
            int fd = ::socket(target_.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            with_socket(fd >= 0 ? fd : -errno);
        }
    }

    void dial(int fd) {
        upstream_ = std::make_unique<Socket>(context_.loop, fd, this);
        if (::connect(fd, target_.sa(), target_.length) == 0) {
            connected();
            return;
        }
        if (errno != EINPROGRESS) {
            next_target(errno);
            return;
        }
        upstream_->want_write(true);
    }

    void next_target(int error) {
        upstream_.reset();
        last_error_ = error;
        ++index_;
        // Only a refusal moves on (the same port on the other loopback address); any other failure is final.
        if (error != ECONNREFUSED) index_ = targets().size();
        try_target();
    }

    // Through the proxy's one writer of decision lines (metrics, the audit log).
    void decision_line(int error) {
        DecisionEvent e;
        e.id = id_;
        e.proto = owner_.forward().proto;
        e.host = target_.ip();
        e.port = target_.port();
        e.decision = "allow";
        e.rule = owner_.forward().rule;
        e.source = owner_.forward().source;
        e.reason = "allowed";
        e.client = peer_;
        if (error == 0) e.upstream_ip = target_.ip();
        if (error != 0) e.error = error == ECONNREFUSED ? "connect-refused" : std::strerror(error);
        record_decision(context_, e);
        logged_ = true;
    }

    void fail(int error) {
        decision_line(error);
        close(error == ECONNREFUSED ? "connect-refused" : std::strerror(error));
    }

    void connected() {
        decision_line(0);
        relay_ = std::make_unique<Relay>(
            *client_, *upstream_,
            [this](const Relay::Stats& stats) { close(stats.error ? std::strerror(stats.error) : ""); },
            [this] { last_activity_ = uv_now(context_.loop); });
        relay_->start();
    }

    static void on_timer(uv_timer_t* timer) {
        auto* self = static_cast<ForwardConnection*>(timer->data);
        if (!self || self->closed_) return;
        const std::uint64_t now = uv_now(self->context_.loop);
        const auto& o = self->context_.options;
        const auto limit =
            static_cast<std::uint64_t>(self->relay_ ? o.idle_timeout.count() : o.connect_timeout.count());
        if (now - self->last_activity_ < limit) return;
        if (!self->relay_) {
            self->last_error_ = ETIMEDOUT;
            self->index_ = self->targets().size();
            self->upstream_.reset();
            self->decision_line(ETIMEDOUT);
            self->close("connect-timeout");
            return;
        }
        self->close("idle-timeout");
    }

    void close(const std::string& error) {
        if (closed_) return;
        closed_ = true;
        uv_timer_stop(timer_);
        Relay::Stats stats;
        if (relay_) stats = relay_->stats();
        relay_.reset();
        upstream_.reset();
        client_.reset();
        if (context_.audit && logged_) {
            CloseEvent e;
            e.id = id_;
            e.proto = owner_.forward().proto;
            e.host = target_.ip();
            e.port = target_.port();
            e.upstream_ip = target_.ip();
            e.bytes_up = stats.bytes_up;
            e.bytes_down = stats.bytes_down;
            e.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - started_);
            e.error = error;
            context_.audit->close(e);
        }
        context_.metrics.bytes_up += stats.bytes_up;
        context_.metrics.bytes_down += stats.bytes_down;
        owner_.retire(this);
    }

    Forwarder& owner_;
    Context& context_;
    std::uint64_t id_;
    std::chrono::steady_clock::time_point started_;
    std::unique_ptr<Socket> client_, upstream_;
    std::unique_ptr<Relay> relay_;
    uv_timer_t* timer_;
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    std::string peer_;
    Address target_;
    std::size_t index_ = 0;
    int last_error_ = 0;
    std::uint64_t last_activity_ = 0;
    bool closed_ = false, logged_ = false;
};

Forwarder::Forwarder(Context& context, int listening_fd, Forward forward)
    : context_(context), forward_(std::move(forward)), reaper_(new uv_check_t) {
    uv_check_init(context_.loop, reaper_);
    reaper_->data = this;
    listener_ = std::make_unique<Listener>(context_.loop, listening_fd, [this](int fd) {
        // A published port is open to every local user (and the network, with ADDR): its connections count
        // against --max-connections with the proxy's, as no one may hold the supervisor's descriptors
        // unbounded.
        if (context_.draining || context_.metrics.connections_active + context_.forward_connections >=
                                     context_.options.max_connections) {
            if (!context_.draining) ++context_.metrics.connections_rejected;
            ::close(fd);
            return;
        }
        ++context_.forward_connections;
        auto connection = std::make_unique<ForwardConnection>(*this, fd);
        ForwardConnection* ptr = connection.get();
        connections_.emplace(ptr, std::move(connection));
        ptr->start();
    });
}

Forwarder::~Forwarder() {
    listener_.reset();
    // Each connection's destructor writes its close line; one retiring during that goes to the graveyard.
    auto all = std::move(connections_);
    context_.forward_connections -= std::min(context_.forward_connections, all.size());
    all.clear();
    graveyard_.clear();
    reaper_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(reaper_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_check_t*>(h); });
}

void Forwarder::retire(ForwardConnection* connection) {
    auto it = connections_.find(connection);
    if (it == connections_.end()) return;
    graveyard_.push_back(std::move(it->second));
    connections_.erase(it);
    if (context_.forward_connections > 0) --context_.forward_connections;
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(reaper_)))
        uv_check_start(reaper_, [](uv_check_t* h) {
            auto* self = static_cast<Forwarder*>(h->data);
            if (!self) return;
            self->graveyard_.clear();
            uv_check_stop(h);
        });
}

}  // namespace cordon::proxy
