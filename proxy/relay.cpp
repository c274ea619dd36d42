#include "proxy/relay.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <tuple>
#include <utility>
#include <vector>

namespace cordon::proxy {

namespace {

// Bigger pipes mean fewer splice() calls per byte on bulk tunnels; they cost nothing while empty. Pipes are
// needed only while bytes are in flight: an empty pipe goes back to this pool, so idle tunnels hold none
// (10,000 idle tunnels would otherwise hold 40,000 descriptors) and busy ones create none.
constexpr int kWantedPipeSize = 512 * 1024;
constexpr std::size_t kPoolMax = 256;

struct PipePool {
    std::vector<Relay::Pipe> free;
    ~PipePool() {
        for (auto& p : free) {
            ::close(p.read);
            ::close(p.write);
        }
    }
};
PipePool& pool() {
    static PipePool p;
    return p;
}

bool take_pipe(Relay::Pipe& pipe) {
    auto& free = pool().free;
    if (!free.empty()) {
        pipe = free.back();
        free.pop_back();
        return true;
    }
    int fds[2];
    if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) return false;
    int size = ::fcntl(fds[1], F_SETPIPE_SZ, kWantedPipeSize);
    if (size < 0) size = ::fcntl(fds[1], F_GETPIPE_SZ);
    pipe = Relay::Pipe{fds[0], fds[1], size > 0 ? static_cast<std::size_t>(size) : std::size_t{4096}};
    return true;
}

void give_pipe(Relay::Pipe& pipe) {
    if (pipe.read < 0) return;
    if (pool().free.size() < kPoolMax) {
        pool().free.push_back(pipe);
    } else {
        ::close(pipe.read);
        ::close(pipe.write);
    }
    pipe = Relay::Pipe{};
}

}  // namespace

Relay::Relay(Socket& client, Socket& upstream, Done done, Activity activity)
    : up_{&client, &upstream, {}, 0, false, false, &stats_.bytes_up},
      down_{&upstream, &client, {}, 0, false, false, &stats_.bytes_down},
      done_(std::move(done)),
      activity_(std::move(activity)) {
    client.set_owner(this);
    upstream.set_owner(this);
}

Relay::~Relay() {
    for (Direction* d : {&up_, &down_}) {
        if (d->in_pipe == 0) {
            give_pipe(d->pipe);
        } else if (d->pipe.read >= 0) {
            ::close(d->pipe.read);  // holds bytes nobody will read
            ::close(d->pipe.write);
        }
    }
}

void Relay::start() {
    update_interest();
}

void Relay::update_interest() {
    // A side reads while its direction has room in the pipe, and waits for writability while the other
    // direction has bytes it could not yet hand over.
    up_.from->want_read(!up_.eof && up_.has_room());
    down_.from->want_read(!down_.eof && down_.has_room());
    up_.to->want_write(up_.in_pipe > 0);
    down_.to->want_write(down_.in_pipe > 0);
}

bool Relay::pump(Direction& d) {
    for (int round = 0; round < 16; ++round) {
        bool progress = false;
        if (d.in_pipe > 0) {
            ssize_t n = ::splice(d.pipe.read, nullptr, d.to->fd(), nullptr, d.in_pipe,
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
        if (!d.eof && d.has_room()) {
            if (d.pipe.read < 0 && !take_pipe(d.pipe)) {
                fail(errno);
                return false;
            }
            ssize_t n = ::splice(d.from->fd(), nullptr, d.pipe.write, nullptr, d.pipe.size - d.in_pipe,
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
    if (d.in_pipe == 0) give_pipe(d.pipe);
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
