// The jail's DNS stub (docs/DESIGN.md, choice 2): UDP and TCP on the jail's 127.0.0.1:53, served from the
// host's side like the proxy's listeners. A and AAAA for a name the policy could allow on some port get the
// name's fake address (fake_addresses.hpp), a name it denies NXDOMAIN, other types an empty answer. Nothing
// is ever forwarded, so a query cannot carry data out of the jail. Every query is one `dns` line in the audit
// log; a denied name counts in the end-of-run summary; a malformed packet is dropped. The stub decides
// nothing and writes no line itself: names go to the proxy's one decider (DecisionPoint::decide_name) and
// their lines to its one writer (decision_log.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_set>
#include <vector>

#include "policy/policy.hpp"
#include "proxy/dns_message.hpp"

struct uv_loop_s;

namespace cordon::proxy {

struct Context;

class DnsStub {
  public:
    explicit DnsStub(Context& context) : context_(context) {}
    ~DnsStub();
    DnsStub(const DnsStub&) = delete;
    DnsStub& operator=(const DnsStub&) = delete;

    // Serves `fd`: a bound UDP socket or a listening TCP socket (messages with a 2-byte length). Takes
    // ownership. Throws std::runtime_error when the loop cannot watch it.
    void serve(int fd);
    // Stops serving (shutdown): closes every socket.
    void close();

    // The answer to one query message; empty when it is malformed (dropped). `proto`: "udp" or "tcp".
    std::vector<std::uint8_t> answer(std::span<const std::uint8_t> message, const char* proto);

  private:
    struct Udp;
    struct TcpListener;
    struct TcpClient;
    friend struct TcpListener;
    friend struct TcpClient;
    Context& context_;
    std::vector<Udp*> udp_;
    std::vector<TcpListener*> tcp_;
    std::unordered_set<TcpClient*> tcp_clients_;
};

}  // namespace cordon::proxy
