#include "proxy/listener.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "proxy/metrics.hpp"

namespace cordon::proxy {

int Listener::bind_tcp(const std::string& address) {
    std::string ip;
    std::uint16_t port = 0;
    if (!split_host_port(address, ip, port))
        throw std::runtime_error("bad listen address '" + address + "' (expected ADDR:PORT, [v6]:PORT)");
    auto a = Address::parse(ip, port);
    int fd = ::socket(a->family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->sa(), a->length) != 0 || ::listen(fd, 4096) != 0) {
        int e = errno;
        ::close(fd);
        throw std::runtime_error("cannot listen on " + address + ": " + std::strerror(e));
    }
    return fd;
}

Listener::Listener(uv_loop_t* loop, int fd, Accept accept)
    : fd_(fd), accept_(std::move(accept)), poll_(new uv_poll_t), pause_timer_(new uv_timer_t) {
    int flags = fcntl(fd_, F_GETFL);
    if (flags >= 0) fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
    fcntl(fd_, F_SETFD, FD_CLOEXEC);
    uv_timer_init(loop, pause_timer_);
    pause_timer_->data = this;
    if (uv_poll_init_socket(loop, poll_, fd_) != 0) throw std::runtime_error("cannot watch listening socket");
    poll_->data = this;
    uv_poll_start(poll_, UV_READABLE, &Listener::on_poll);
}

Listener::~Listener() {
    poll_->data = nullptr;
    pause_timer_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(poll_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
    uv_close(reinterpret_cast<uv_handle_t*>(pause_timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
    ::close(fd_);
}

Address Listener::local_address() const {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
    return Address::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

void Listener::on_poll(uv_poll_t* handle, int status, int) {
    auto* self = static_cast<Listener*>(handle->data);
    if (!self || status < 0) return;
    for (int i = 0; i < 64; ++i) {
        int fd = ::accept4(self->fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                // Out of descriptors: stop accepting for a moment rather than spin on a readable socket.
                uv_poll_stop(self->poll_);
                uv_timer_start(self->pause_timer_, &Listener::on_resume, 100, 0);
            }
            return;
        }
        self->accept_(fd);
    }
}

void Listener::on_resume(uv_timer_t* timer) {
    auto* self = static_cast<Listener*>(timer->data);
    if (self) uv_poll_start(self->poll_, UV_READABLE, &Listener::on_poll);
}

}  // namespace cordon::proxy
