// The Vonage Voice API's WebSocket connection (docs/TELEPHONY.md, "Vonage"): GET
// /v1/telephony/vonage (an NCCO connect action with a websocket endpoint: the caller heard, the
// replies spoken back) and /v1/telephony/vonage/listen (listen-only: nothing is ever sent back),
// each a call whose front is a MediaStreamFront (media_stream_front.h) speaking Vonage's dialect
// (vonage_messages.h): 16-bit linear PCM in binary frames both ways, the replies in frames of
// exactly 20 ms, notify for marks and clear for barge-in.
//
// The rate is chosen in the NCCO (the endpoint's content-type), before brisvox hears of the call,
// while the call's encoding is fixed on the upgrade: the uri says it, ?rate=8000|16000 (default
// 16000), and a websocket:connected whose content-type is another ends the call (bad_media_format).
//
// Authentication: the server's usual token (an Authorization header, as the NCCO endpoint's
// authorization sends it, or ?token= in the uri), or a "token" key of the NCCO endpoint's headers
// (it arrives in websocket:connected, is checked there and is not passed on to the application).
#pragma once

#include <memory>

#include "server/call_params.h"
#include "server/media_stream_front.h"
#include "server/server_context.h"
#include "server/ws_admission.h"

namespace brisvox::server {

std::unique_ptr<StreamDialect> make_vonage_dialect(int rate_hz);

// /v1/telephony/vonage's part of an upgrade (ws_admission.h): a call (its stream counts in
// limits.max_streams) at the uri's rate (telephony_call_request).
class VonageEndpoint final : public WsEndpoint {
 public:
  VonageEndpoint(ServerContext& ctx, bool listen_only) : ctx_(ctx), listen_only_(listen_only) {}
  bool counts_as_stream() const override { return true; }
  std::optional<TelephonyProvider> telephony_provider() const override { return TelephonyProvider::kVonage; }
  bool token_in_first_message() const override { return true; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  const bool listen_only_;
  bool authorized_ = false;
  int rate_hz_ = 16000;
  CallRequest request_;
};

}  // namespace brisvox::server
