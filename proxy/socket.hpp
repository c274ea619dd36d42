// A non-blocking TCP socket on the libuv loop: readiness events for its owner and a write buffer that is sent
// as the peer accepts it. The proxy drives raw fds (not uv_tcp) so that tunnels can splice() between them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

struct uv_loop_s;
struct uv_poll_s;

namespace cordon::proxy {

class Socket;

struct SocketOwner {
    virtual void on_readable(Socket& socket) = 0;
    // The owner asked for write readiness (want_write) and the socket is writable.
    virtual void on_writable(Socket& socket) { (void)socket; }
    // Everything queued with send() has been written.
    virtual void on_drained(Socket& socket) { (void)socket; }
    // A write failed (errno value): the socket is unusable.
    virtual void on_error(Socket& socket, int error) = 0;
    virtual ~SocketOwner() = default;
};

class Socket {
  public:
    // Takes ownership of `fd` (already non-blocking).
    Socket(uv_loop_s* loop, int fd, SocketOwner* owner);
    ~Socket();  // closes the fd; the poll handle is freed by the loop
    Socket(const Socket&) = delete;
    Socket& operator=(const Socket&) = delete;

    int fd() const { return fd_; }
    void set_owner(SocketOwner* owner) { owner_ = owner; }
    void want_read(bool on);
    void want_write(bool on);
    bool reading() const { return read_; }

    // Reads into `buf`: >0 bytes, 0 at EOF, -1 would block, -2 on error (errno kept in error()).
    long read(char* buf, std::size_t size);
    // Writes now what the kernel takes and keeps the rest. False when the socket failed.
    bool send(std::string_view data);
    std::size_t queued() const { return out_.size() - out_offset_; }
    // While corked, send() only queues; uncork() writes everything queued at once.
    void cork() { corked_ = true; }
    void uncork();
    // shutdown(SHUT_WR) once everything queued is written.
    void shutdown_write_when_drained();
    int error() const { return error_; }

  private:
    static void on_poll(uv_poll_s* handle, int status, int events);
    bool flush();
    void update();

    int fd_;
    SocketOwner* owner_;
    uv_poll_s* poll_;
    bool read_ = false, write_ = false, shutdown_pending_ = false, failed_ = false, corked_ = false;
    int events_ = 0;
    int error_ = 0;
    std::string out_;
    std::size_t out_offset_ = 0;
};

}  // namespace cordon::proxy
