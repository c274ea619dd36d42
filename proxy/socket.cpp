#include "proxy/socket.hpp"

#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>

namespace cordon::proxy {

Socket::Socket(uv_loop_t* loop, int fd, SocketOwner* owner) : fd_(fd), owner_(owner), poll_(new uv_poll_t) {
    if (uv_poll_init_socket(loop, poll_, fd) != 0) {
        delete poll_;
        poll_ = nullptr;
        failed_ = true;
        error_ = EBADF;
        return;
    }
    poll_->data = this;
}

Socket::~Socket() {
    if (poll_) {
        poll_->data = nullptr;
        uv_close(reinterpret_cast<uv_handle_t*>(poll_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
    }
    if (fd_ >= 0) ::close(fd_);
}

void Socket::want_read(bool on) {
    read_ = on;
    update();
}

void Socket::want_write(bool on) {
    write_ = on;
    update();
}

void Socket::update() {
    if (!poll_) return;
    int events = 0;
    if (read_) events |= UV_READABLE;
    if (write_ || queued() > 0) events |= UV_WRITABLE;
    if (events == events_) return;
    events_ = events;
    if (events == 0)
        uv_poll_stop(poll_);
    else
        uv_poll_start(poll_, events, &Socket::on_poll);
}

long Socket::read(char* buf, std::size_t size) {
    for (;;) {
        ssize_t n = ::recv(fd_, buf, size, 0);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return -1;
        error_ = errno;
        return -2;
    }
}

bool Socket::send(std::string_view data) {
    if (failed_) return false;
    if (corked_) {
        out_.append(data);
        return true;
    }
    if (queued() == 0 && !data.empty() && !corked_) {
        // Fast path: nothing waiting, write straight from the caller's buffer.
        for (;;) {
            ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
            if (n >= 0) {
                data.remove_prefix(static_cast<std::size_t>(n));
                break;
            }
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            failed_ = true;
            error_ = errno;
            return false;
        }
        if (data.empty()) {
            out_.clear();
            out_offset_ = 0;
            return true;
        }
    }
    if (out_offset_ > 0 && out_offset_ >= out_.size() / 2) {
        out_.erase(0, out_offset_);
        out_offset_ = 0;
    }
    out_.append(data);
    update();
    return true;
}

bool Socket::flush() {
    while (queued() > 0) {
        ssize_t n = ::send(fd_, out_.data() + out_offset_, queued(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
            failed_ = true;
            error_ = errno;
            return false;
        }
        out_offset_ += static_cast<std::size_t>(n);
    }
    // Give back memory a large body left behind; an idle connection keeps at most a few KiB.
    if (out_.capacity() > 4096)
        std::string().swap(out_);
    else
        out_.clear();
    out_offset_ = 0;
    return true;
}

void Socket::uncork() {
    corked_ = false;
    if (queued() == 0) return;
    if (!failed_) flush();  // a failure is reported by the next poll event (write interest stays on)
    update();
}

void Socket::shutdown_write_when_drained() {
    if (queued() == 0) {
        ::shutdown(fd_, SHUT_WR);
        return;
    }
    shutdown_pending_ = true;
}

void Socket::on_poll(uv_poll_t* handle, int status, int events) {
    auto* self = static_cast<Socket*>(handle->data);
    if (!self) return;
    SocketOwner* owner = self->owner_;
    if (status < 0) {
        // libuv reports POLLERR as EBADF: the socket knows the real reason.
        int error = 0;
        socklen_t len = sizeof error;
        if (getsockopt(self->fd_, SOL_SOCKET, SO_ERROR, &error, &len) != 0 || error == 0) error = -status;
        self->failed_ = true;
        self->error_ = error;
        owner->on_error(*self, error);
        return;
    }
    if (events & UV_WRITABLE) {
        if (self->queued() > 0) {
            if (!self->flush()) {
                owner->on_error(*self, self->error_);
                return;
            }
            if (self->queued() == 0) {
                self->update();
                if (self->shutdown_pending_) {
                    self->shutdown_pending_ = false;
                    ::shutdown(self->fd_, SHUT_WR);
                }
                // The owner may destroy the socket in on_drained: touch nothing after it.
                owner->on_drained(*self);
                return;
            }
        } else if (self->write_) {
            owner->on_writable(*self);
            return;
        }
    }
    if (events & UV_READABLE) owner->on_readable(*self);
}

}  // namespace cordon::proxy
