// The dialer: connects to exactly the addresses the address guard passed, in order, moving to the next one
// when a connect fails or times out. Nothing here resolves names.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "proxy/address_guard.hpp"
#include "proxy/socket.hpp"

struct uv_loop_s;
struct uv_timer_s;

namespace cordon::proxy {

struct DialResult {
    std::unique_ptr<Socket> socket;  // connected; null on failure
    Address address;                 // the address connected to (or the last one tried)
    int error = 0;                   // errno of the last failure (ETIMEDOUT when the connect timed out)
};

class Dialer final : public SocketOwner {
  public:
    using Callback = std::function<void(DialResult)>;

    // Starts at once; `done` runs on the loop, never inside the constructor. Destroying the dialer cancels
    // it.
    Dialer(uv_loop_s* loop, std::vector<Address> addresses, std::chrono::milliseconds timeout, Callback done);
    ~Dialer() override;

    void on_readable(Socket& socket) override;
    void on_writable(Socket& socket) override;
    void on_error(Socket& socket, int error) override;

  private:
    void try_next();
    void finish_attempt(int error);
    static void on_timeout(uv_timer_s* timer);

    uv_loop_s* loop_;
    std::vector<Address> addresses_;
    std::size_t next_ = 0;
    std::chrono::milliseconds timeout_;
    Callback done_;
    std::unique_ptr<Socket> socket_;
    Address current_;
    uv_timer_s* timer_;
    int last_error_ = 0;
};

}  // namespace cordon::proxy
