// A listening socket on the loop: a TCP address the proxy binds, or a socket handed over (e.g. created inside
// a jail's network namespace). Accepted sockets go to the owner, non-blocking.
#pragma once

#include <functional>
#include <string>

#include "proxy/address_guard.hpp"

struct uv_loop_s;
struct uv_poll_s;
struct uv_timer_s;

namespace cordon::proxy {

class Listener {
  public:
    using Accept = std::function<void(int fd)>;

    // Binds and listens on `address` (ADDR:PORT). Throws std::runtime_error with a message on failure.
    static int bind_tcp(const std::string& address);

    // Serves `fd` (listening, any blocking mode); takes ownership.
    Listener(uv_loop_s* loop, int fd, Accept accept);
    ~Listener();
    Listener(const Listener&) = delete;
    Listener& operator=(const Listener&) = delete;

    Address local_address() const;

  private:
    static void on_poll(uv_poll_s* handle, int status, int events);
    static void on_resume(uv_timer_s* timer);

    int fd_;
    Accept accept_;
    uv_poll_s* poll_;
    uv_timer_s* pause_timer_;
};

}  // namespace cordon::proxy
