// The SOCKS5 front-end: method negotiation (no auth, or username/password when --auth-token is set), the
// CONNECT request, and replies. BIND and UDP ASSOCIATE are answered 0x07, unknown address types 0x08, policy
// and guard refusals 0x02. Works however the client splits its bytes. After the reply the client belongs to
// the tunnel.
#pragma once

#include <cstdint>

#include "proxy/front_end.hpp"
#include "proxy/pipeline.hpp"

namespace cordon::proxy {

class Socks5FrontEnd final : public FrontEnd {
  public:
    explicit Socks5FrontEnd(Pipeline& pipeline) : p_(pipeline) {}

    void read() override;
    int status_for(const Verdict& verdict) const override;
    void answer(const Verdict& verdict) override;
    bool needs_client() const override;

  private:
    using Phase = Pipeline::Phase;

    enum class Step { Greeting, Auth, Request };
    void reply(std::uint8_t code, bool then_close);

    Pipeline& p_;
    Step step_ = Step::Greeting;
};

}  // namespace cordon::proxy
