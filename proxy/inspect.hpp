// The termination stage: the relay step of the pipeline (connection.hpp) picks it instead of the splice
// tunnel when the policy inspects the tunnel's host (sandbox.network.inspect, --inspect, srt's tlsTerminate),
// whatever front-end made the tunnel (CONNECT, SOCKS5, transparent).
//
//   client's first bytes: not a TLS handshake -> relayed opaquely (splice), or closed with
//                         refuseOpaqueTunnels
//   TLS: upstream handshake first (verified: system store + --upstream-ca, hostname checked); a failure is
//        answered inside cordon's TLS: the client's first request gets a 502 naming the reason (one audit
//        line), and no byte of that upstream passes
//     -> a leaf for the host (certs::LeafCache), the client's handshake (ALPN http/1.1 only)
//     -> HTTP/1.1 requests on the plaintext (InspectedRequests, inspected_requests.hpp): decided, forwarded
//        through the one HTTP/1.1 forwarder (http_forwarder.hpp), one decision line each
//
// TLS runs on memory BIOs: every byte moves through the loop's non-blocking sockets, nothing blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/http_forwarder.hpp"
#include "proxy/inspected_requests.hpp"
#include "proxy/socket.hpp"

typedef struct ssl_st SSL;

namespace cordon::proxy {

class Pipeline;

class InspectedTunnel final : public SocketOwner {
  public:
    explicit InspectedTunnel(Pipeline& pipeline);
    ~InspectedTunnel() override;
    // Takes over both sockets and the client bytes already read (Pipeline::input()).
    void start();
    bool declined() const { return declined_; }
    std::uint64_t bytes_up() const { return bytes_up_; }
    std::uint64_t bytes_down() const { return bytes_down_; }

    // The connection is closing with `error`: a request in flight gets its decision line now (the status the
    // client saw, else 502) with the error.
    void end_in_flight(const std::string& error);

    void on_readable(Socket& socket) override;
    void on_drained(Socket& socket) override;
    void on_error(Socket& socket, int error) override;

  private:
    enum class State { Peek, UpstreamHandshake, ClientHandshake, Open, Done };

    // The requests' two byte sinks: the client's and the upstream's TLS streams (or sockets, for plain HTTP).
    struct Side final : ByteSink {
        Side(InspectedTunnel& tunnel, bool client_side) : t(tunnel), client(client_side) {}
        InspectedTunnel& t;
        bool client;
        bool write(std::string_view data) override {
            return client ? t.write_client(data) : t.write_upstream(data);
        }
        bool flush() override { return t.flush(); }
    };

    void peek();
    void opaque();
    // Plain HTTP to a host with request rules: the requests are read and decided as inside TLS.
    void read_plain_http();
    void begin_upstream();
    void continue_upstream();
    void upstream_refused(const std::string& error);
    void begin_client();
    void continue_client();
    void read_client_plaintext();
    void read_upstream_plaintext();
    bool flush();  // TLS output to both sockets; false when the connection was closed
    // The whole of `data` into the TLS stream, or the connection is finished (false).
    bool write_client(std::string_view data);
    bool write_upstream(std::string_view data);
    bool write_all(SSL* ssl, std::string_view data, const char* side);
    bool write_plain(Socket& socket, std::string_view data, const char* side);
    void update_interest();
    void finish(const std::string& error);

    Pipeline& p_;
    State state_ = State::Peek;
    bool declined_ = false;
    bool plain_ = false;          // HTTP without TLS (read_plain_http)
    SSL* up_ = nullptr;           // cordon as the client of the upstream
    SSL* down_ = nullptr;         // cordon as the server of the client
    std::string client_cipher_;   // the client's bytes before its handshake can start
    std::string upstream_error_;  // the upstream failed its handshake: why
    bool client_eof_ = false;
    std::uint64_t bytes_up_ = 0, bytes_down_ = 0;
    Side client_side_, upstream_side_;
    std::unique_ptr<InspectedRequests> requests_;  // the HTTP/1.1 requests inside
};

}  // namespace cordon::proxy
