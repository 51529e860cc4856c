// Telnyx Media Streaming over WebSockets (docs/TELEPHONY.md, "Telnyx"): GET /v1/telephony/telnyx
// (a stream with stream_bidirectional_mode "rtp": replies are spoken back) and
// /v1/telephony/telnyx/listen (listen-only: nothing is ever sent back), each a call whose front is
// a MediaStreamFront (media_stream_front.h) speaking Telnyx's dialect (telnyx_messages.h).
//
// The codec is chosen in Telnyx's command (stream_codec, stream_bidirectional_codec,
// stream_bidirectional_sampling_rate), before brisvox hears of the call, while the call's encoding
// is fixed on the upgrade: the stream_url says it, ?codec=PCMU|PCMA&rate=8000|16000 (default PCMU
// at 8000 Hz), and a start whose media_format is another ends the call (bad_media_format).
//
// Authentication: the server's usual token (Authorization header, ?token=), or Telnyx's streaming
// auth token when it is the server's: on the upgrade as the x-telnyx-streaming-auth-token header,
// or in the connected message; or a "token" custom parameter of a TeXML <Stream> (checked when start
// arrives; not passed on to the application).
#pragma once

#include <memory>

#include "server/call_params.h"
#include "server/media_stream_front.h"
#include "server/server_context.h"
#include "server/telnyx_messages.h"
#include "server/ws_admission.h"

namespace brisvox::server {

std::unique_ptr<StreamDialect> make_telnyx_dialect(const TelnyxFormat& format);

// /v1/telephony/telnyx's part of an upgrade (ws_admission.h): a call (its stream counts in
// limits.max_streams) in the stream_url's codec and rate (telephony_call_request).
class TelnyxEndpoint final : public WsEndpoint {
 public:
  TelnyxEndpoint(ServerContext& ctx, bool listen_only) : ctx_(ctx), listen_only_(listen_only) {}
  bool counts_as_stream() const override { return true; }
  std::optional<TelephonyProvider> telephony_provider() const override { return TelephonyProvider::kTelnyx; }
  bool token_in_first_message() const override { return true; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  const bool listen_only_;
  bool authorized_ = false;
  std::string header_token_;  // x-telnyx-streaming-auth-token
  TelnyxFormat format_;
  CallRequest request_;
};

}  // namespace brisvox::server
