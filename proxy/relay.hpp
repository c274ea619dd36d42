// The tunnel relay for CONNECT and SOCKS5: moves bytes both ways between two connected sockets with splice()
// through a pipe (zero-copy; the pipe is made on first use, so idle tunnels hold no buffers). Back-pressure
// is the pipe: a direction stops reading while its pipe is full. EOF on one side becomes shutdown(SHUT_WR) on
// the other (half-close); the relay ends when both directions have ended or either side fails.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "proxy/socket.hpp"

namespace cordon::proxy {

class Relay final : public SocketOwner {
  public:
    struct Stats {
        std::uint64_t bytes_up = 0;    // client -> upstream
        std::uint64_t bytes_down = 0;  // upstream -> client
        int error = 0;                 // errno of a failure, 0 for a clean end
    };
    // Called once, when the tunnel ended. May destroy the relay.
    using Done = std::function<void(const Stats&)>;
    // Called on every transfer (for the idle timer); cheap.
    using Activity = std::function<void()>;

    // Both sockets must have nothing queued. The relay becomes their owner.
    Relay(Socket& client, Socket& upstream, Done done, Activity activity);
    ~Relay() override;
    void start();

    void on_readable(Socket& socket) override;
    void on_writable(Socket& socket) override;
    void on_error(Socket& socket, int error) override;

    const Stats& stats() const { return stats_; }

    struct Pipe {
        int read = -1, write = -1;
        std::size_t size = 0;  // its capacity in bytes
    };

  private:
    struct Direction {
        Socket* from;
        Socket* to;
        Pipe pipe;
        std::size_t in_pipe = 0;
        bool eof = false, shut = false;
        std::uint64_t* bytes;
        // Reading needs room in the pipe; without a pipe yet, one will be taken (with room).
        bool has_room() const { return pipe.read < 0 || in_pipe < pipe.size; }
    };
    bool pump(Direction& d);  // false on failure
    void update_interest();
    void check_done();
    void fail(int error);

    Stats stats_;  // before up_ and down_, which point into it
    Direction up_, down_;
    Done done_;
    Activity activity_;
    bool finished_ = false;
};

}  // namespace cordon::proxy
