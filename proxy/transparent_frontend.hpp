// The transparent front-end (docs/DESIGN.md, choice 2): a connection redirected to the jail's transparent
// listener by nftables. Its target is the original destination (SO_ORIGINAL_DST / IP6T_SO_ORIGINAL_DST):
// a fake address of the DNS stub stands for its name, which the pipeline decides, resolves, guards and dials
// exactly like a CONNECT target; any other address is decided as the IP literal it is (allowed only by a
// rule naming it, then guarded). The client's first bytes are waited for briefly and, when they are a TLS
// ClientHello, its server name is logged (a name other than the target's is logged as a mismatch, and
// refused with --strict-sni); they are never consumed: the tunnel sends them on. A refusal resets the
// connection (the client sees ECONNRESET at once).
#pragma once

#include <cstdint>
#include <string>

#include "proxy/front_end.hpp"
#include "proxy/pipeline.hpp"

struct uv_timer_s;

namespace cordon::proxy {

class TransparentFrontEnd final : public FrontEnd {
  public:
    explicit TransparentFrontEnd(Pipeline& pipeline);
    ~TransparentFrontEnd() override;

    void read() override;
    int status_for(const Verdict&) const override { return 0; }
    void answer(const Verdict& verdict) override;
    bool needs_client() const override { return false; }

  private:
    using Phase = Pipeline::Phase;
    // How long to wait for a ClientHello before deciding without one (server-first protocols send nothing):
    // with --strict-sni longer, so that a slow TLS client cannot slip past the check.
    static constexpr std::uint64_t kFirstBytesMs = 50;
    static constexpr std::uint64_t kStrictFirstBytesMs = 5000;

    bool find_target();
    void decide();
    static void on_timer(uv_timer_s* timer);

    Pipeline& p_;
    uv_timer_s* timer_;
    bool targeted_ = false;  // the original destination was read
    bool deciding_ = false;  // handed to the pipeline: later bytes belong to the tunnel
    bool waited_ = false;    // the first-bytes wait is over
    std::string host_;       // the name behind the fake address, or the IP literal
    std::uint16_t port_ = 0;
    std::string original_dst_, refusal_;
};

}  // namespace cordon::proxy
