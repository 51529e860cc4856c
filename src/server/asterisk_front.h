// Asterisk's WebSocket channel driver, chan_websocket (docs/TELEPHONY.md, "Asterisk"): GET
// /v1/telephony/asterisk (a channel that Asterisk dials out to brisvox: Dial(WebSocket/<client>/
// c(ulaw)), or ARI's externalMedia with transport websocket; the caller heard, the replies played)
// and /v1/telephony/asterisk/listen (listen-only: nothing is ever sent back), each a call whose
// front is a MediaStreamFront (media_stream_front.h) speaking chan_websocket's dialect
// (asterisk_messages.h): the channel's format in binary frames both ways, each reply one bulk
// transfer (START_MEDIA_BUFFERING, its audio in 20 ms frames, STOP_MEDIA_BUFFERING with a mark's id,
// answered by MEDIA_BUFFERING_COMPLETED once played), FLUSH_MEDIA for barge-in.
//
// The format is the dial string's (c(ulaw), alaw, slin, slin16), fixed before brisvox hears of it,
// so the websocket_client's uri says it: ?format=ulaw|alaw|slin|slin16 (default ulaw), and a
// MEDIA_START with another ends the call (bad_media_format). Other query keys (the dial string's
// v(name=value,...)) are the call's parameters, beside JSON's channel_variables.
//
// Authentication: the server's usual token (Authorization: Bearer, or ?token= in the uri, which
// v(token=...) adds), or websocket_client.conf's username and password as HTTP Basic
// authentication with the token as the password. The subprotocol "media" (websocket_client.conf's
// protocols = media) is answered when asked for.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/call_params.h"
#include "server/media_stream_front.h"
#include "server/server_context.h"
#include "server/ws_admission.h"

namespace brisvox::server {

// `format`: Asterisk's name of the channel's format; `media_protocol`: the upgrade asked for the
// "media" subprotocol.
std::unique_ptr<StreamDialect> make_asterisk_dialect(std::string format, bool media_protocol);

// /v1/telephony/asterisk's part of an upgrade (ws_admission.h): a call (its stream counts in
// limits.max_streams) in the uri's format (telephony_call_request).
class AsteriskEndpoint final : public WsEndpoint {
 public:
  AsteriskEndpoint(ServerContext& ctx, bool listen_only) : ctx_(ctx), listen_only_(listen_only) {}
  bool counts_as_stream() const override { return true; }
  std::optional<TelephonyProvider> telephony_provider() const override { return TelephonyProvider::kAsterisk; }
  // The token is checked in parse(): HTTP Basic authentication is Asterisk's, not the server's.
  bool token_in_first_message() const override { return true; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  const bool listen_only_;
  std::string format_ = "ulaw";
  bool media_protocol_ = false;
  std::vector<std::pair<std::string, std::string>> parameters_;
  CallRequest request_;
};

}  // namespace brisvox::server
