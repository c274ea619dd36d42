#include "proxy/dialer.hpp"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>

namespace cordon::proxy {

Dialer::Dialer(uv_loop_t* loop, std::vector<Address> addresses, std::chrono::milliseconds timeout,
               Callback done)
    : loop_(loop),
      addresses_(std::move(addresses)),
      timeout_(timeout),
      done_(std::move(done)),
      timer_(new uv_timer_t) {
    uv_timer_init(loop_, timer_);
    timer_->data = this;
    last_error_ = EHOSTUNREACH;
    // Start on the next loop turn so that `done` never runs inside the constructor.
    uv_timer_start(
        timer_, [](uv_timer_t* t) { static_cast<Dialer*>(t->data)->try_next(); }, 0, 0);
}

Dialer::~Dialer() {
    timer_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
}

void Dialer::try_next() {
    while (next_ < addresses_.size()) {
        current_ = addresses_[next_++];
        int fd = ::socket(current_.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last_error_ = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int rc;
        do
            rc = ::connect(fd, current_.sa(), current_.length);
        while (rc < 0 && errno == EINTR);
        if (rc < 0 && errno != EINPROGRESS) {
            last_error_ = errno;
            ::close(fd);
            continue;
        }
        socket_ = std::make_unique<Socket>(loop_, fd, this);
        socket_->want_write(true);
        uv_timer_start(timer_, &Dialer::on_timeout, static_cast<std::uint64_t>(timeout_.count()), 0);
        return;
    }
    DialResult result;
    result.address = current_;
    result.error = last_error_;
    auto done = std::move(done_);
    done(std::move(result));  // may destroy this
}

void Dialer::on_timeout(uv_timer_t* timer) {
    auto* self = static_cast<Dialer*>(timer->data);
    if (!self) return;
    self->finish_attempt(ETIMEDOUT);
}

void Dialer::on_readable(Socket&) {}

void Dialer::on_writable(Socket& socket) {
    int error = 0;
    socklen_t len = sizeof error;
    if (getsockopt(socket.fd(), SOL_SOCKET, SO_ERROR, &error, &len) != 0) error = errno;
    finish_attempt(error);
}

void Dialer::on_error(Socket&, int error) {
    finish_attempt(error ? error : ECONNREFUSED);
}

void Dialer::finish_attempt(int error) {
    uv_timer_stop(timer_);
    if (error == 0 && socket_) {
        socket_->want_write(false);
        DialResult result;
        result.socket = std::move(socket_);
        result.address = current_;
        auto done = std::move(done_);
        done(std::move(result));  // may destroy this
        return;
    }
    last_error_ = error;
    socket_.reset();
    try_next();
}

}  // namespace cordon::proxy
