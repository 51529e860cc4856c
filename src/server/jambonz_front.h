// jambonz's listen (alias stream) verb (docs/TELEPHONY.md, "jambonz"): GET /v1/telephony/jambonz
// (the verb with bidirectionalAudio streaming: the caller heard, the replies streamed back) and
// /v1/telephony/jambonz/listen (bidirectionalAudio disabled: nothing is ever sent back), each a call
// whose front is a MediaStreamFront (media_stream_front.h) speaking jambonz's dialect
// (jambonz_messages.h): 16-bit linear PCM in binary frames both ways, mark for playback truth and
// killAudio for barge-in.
//
// The rate is the verb's (sampleRate for the caller's audio, bidirectionalAudio.sampleRate for the
// replies; both must be the same), chosen before brisvox hears of the call, while the call's
// encoding is fixed on the upgrade: the url says it, ?rate=8000|16000 (default 8000, the verb's),
// and a preamble with another ends the call (bad_media_format).
//
// Authentication: the server's usual token (?token= in the url, or a bearer Authorization header),
// the verb's wsAuth (HTTP Basic: the token as the password, the username any), or a "token" key of
// the verb's metadata (it arrives in the preamble, is checked there and is not passed on to the
// application). The subprotocol asked for, audio.jambonz.org or audio.drachtio.org, is answered.
#pragma once

#include <memory>
#include <string>

#include "server/call_params.h"
#include "server/media_stream_front.h"
#include "server/server_context.h"
#include "server/ws_admission.h"

namespace brisvox::server {

// `subprotocol`: the one the upgrade asked for and is answered with ("" when it asked for none).
std::unique_ptr<StreamDialect> make_jambonz_dialect(int rate_hz, std::string subprotocol);

// /v1/telephony/jambonz's part of an upgrade (ws_admission.h): a call (its stream counts in
// limits.max_streams) at the url's rate (telephony_call_request).
class JambonzEndpoint final : public WsEndpoint {
 public:
  JambonzEndpoint(ServerContext& ctx, bool listen_only) : ctx_(ctx), listen_only_(listen_only) {}
  bool counts_as_stream() const override { return true; }
  std::optional<TelephonyProvider> telephony_provider() const override { return TelephonyProvider::kJambonz; }
  bool token_in_first_message() const override { return true; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  const bool listen_only_;
  bool authorized_ = false;
  int rate_hz_ = 8000;
  std::string subprotocol_;
  CallRequest request_;
};

}  // namespace brisvox::server
