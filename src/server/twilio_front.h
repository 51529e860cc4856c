// Twilio Media Streams (docs/TELEPHONY.md, "Twilio"): GET /v1/telephony/twilio (<Connect><Stream>,
// bidirectional) and /v1/telephony/twilio/listen (<Start><Stream>, listen-only: nothing is ever sent
// back), each a call whose front is a MediaStreamFront (media_stream_front.h) speaking Twilio's
// dialect (twilio_messages.h): mu-law at 8000 Hz mono, the streamSid on every message brisvox
// sends.
//
// Authentication: Twilio drops a query string from a <Stream> url, so besides the server's usual
// token (Authorization header, ?token=), a <Parameter name="token"> of the stream is taken, checked
// when start arrives (it is not passed on to the application). With --twilio-auth-token, the
// handshake's X-Twilio-Signature must sign the URL (twilio_signature.h): 403 before the upgrade
// otherwise, and a valid one stands for the token.
#pragma once

#include <memory>

#include "server/call_params.h"
#include "server/media_stream_front.h"
#include "server/server_context.h"
#include "server/ws_admission.h"

namespace brisvox::server {

std::unique_ptr<StreamDialect> make_twilio_dialect();

// /v1/telephony/twilio's part of an upgrade (ws_admission.h): a call (its stream counts in
// limits.max_streams) at 8000 Hz mu-law (telephony_call_request).
class TwilioEndpoint final : public WsEndpoint {
 public:
  TwilioEndpoint(ServerContext& ctx, bool listen_only) : ctx_(ctx), listen_only_(listen_only) {}
  bool counts_as_stream() const override { return true; }
  std::optional<TelephonyProvider> telephony_provider() const override { return TelephonyProvider::kTwilio; }
  bool token_in_first_message() const override { return true; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  const bool listen_only_;
  bool authorized_ = false;
  CallRequest request_;
};

}  // namespace brisvox::server
