#include "proxy/relay.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace cordon::proxy {

namespace {
constexpr std::size_t kPipeCapacity = 64 * 1024;  // the default pipe size
}

Relay::Relay(Socket& client, Socket& upstream, Done done, Activity activity)
    : up_{&client, &upstream, -1, -1, 0, false, false, &stats_.bytes_up},
      down_{&upstream, &client, -1, -1, 0, false, false, &stats_.bytes_down},
      done_(std::move(done)),
      activity_(std::move(activity)) {
    client.set_owner(this);
    upstream.set_owner(this);
}

Relay::~Relay() {
    for (Direction* d : {&up_, &down_}) {
        if (d->pipe_read >= 0) ::close(d->pipe_read);
        if (d->pipe_write >= 0) ::close(d->pipe_write);
    }
}

void Relay::start() {
    update_interest();
}

void Relay::update_interest() {
    // A side reads while its direction has room in the pipe, and waits for writability while the other
    // direction has bytes it could not yet hand over.
    up_.from->want_read(!up_.eof && up_.in_pipe < kPipeCapacity);
    down_.from->want_read(!down_.eof && down_.in_pipe < kPipeCapacity);
    up_.to->want_write(up_.in_pipe > 0);
    down_.to->want_write(down_.in_pipe > 0);
}

bool Relay::pump(Direction& d) {
    for (int round = 0; round < 16; ++round) {
        bool progress = false;
        if (d.in_pipe > 0) {
            ssize_t n = ::splice(d.pipe_read, nullptr, d.to->fd(), nullptr, d.in_pipe,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d.in_pipe -= static_cast<std::size_t>(n);
                *d.bytes += static_cast<std::uint64_t>(n);
                progress = true;
            } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
                fail(errno);
                return false;
            }
        }
        if (!d.eof && d.in_pipe < kPipeCapacity) {
            if (d.pipe_read < 0) {
                int fds[2];
                if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
                    fail(errno);
                    return false;
                }
                d.pipe_read = fds[0];
                d.pipe_write = fds[1];
            }
            ssize_t n = ::splice(d.from->fd(), nullptr, d.pipe_write, nullptr, kPipeCapacity - d.in_pipe,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (n > 0) {
                d.in_pipe += static_cast<std::size_t>(n);
                progress = true;
            } else if (n == 0) {
                d.eof = true;
                progress = true;
            } else if (errno != EAGAIN && errno != EINTR) {
                fail(errno);
                return false;
            }
        }
        if (d.eof && d.in_pipe == 0 && !d.shut) {
            // Half-close: the peer sees EOF, and may go on sending the other way.
            ::shutdown(d.to->fd(), SHUT_WR);
            d.shut = true;
        }
        if (!progress) break;
    }
    return true;
}

void Relay::on_readable(Socket& socket) {
    Direction& d = &socket == up_.from ? up_ : down_;
    if (!pump(d)) return;
    if (activity_) activity_();
    update_interest();
    check_done();
}

void Relay::on_writable(Socket& socket) {
    Direction& d = &socket == up_.to ? up_ : down_;
    if (!pump(d)) return;
    if (activity_) activity_();
    update_interest();
    check_done();
}

void Relay::on_error(Socket&, int error) {
    fail(error);
}

void Relay::fail(int error) {
    if (finished_) return;
    finished_ = true;
    stats_.error = error;
    up_.from->want_read(false);
    down_.from->want_read(false);
    up_.to->want_write(false);
    down_.to->want_write(false);
    auto done = std::move(done_);
    done(stats_);
}

void Relay::check_done() {
    if (finished_ || !(up_.shut && down_.shut)) return;
    finished_ = true;
    auto done = std::move(done_);
    done(stats_);
}

}  // namespace cordon::proxy
