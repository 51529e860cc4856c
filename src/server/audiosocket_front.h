// Asterisk's AudioSocket (docs/TELEPHONY.md, "Asterisk (AudioSocket)") as a call: GET
// /v1/telephony/audiosocket carries an AudioSocket TCP stream's bytes in binary WebSocket messages
// both ways. The AudioSocket port (audiosocket_relay.h, serve --audiosocket-port) relays each
// Asterisk connection to it over loopback; a client that speaks AudioSocket over a WebSocket may
// use it directly. The call's front is a MediaStreamFront (media_stream_front.h) speaking the
// AudioSocket dialect (audiosocket_messages.h): its frames read from the binary stream, the
// replies as audio frames of exactly 20 ms handed out at most kPlayoutLeadMs ahead of real time
// (Asterisk writes each frame to the channel the moment it arrives: it has no queue to clear, so a
// barge-in is the purge of what was not yet sent), a hangup frame when the application hangs up.
// AudioSocket echoes nothing: speak_done and marks go out when their audio has been sent.
//
// AudioSocket has no authentication of its own: the upgrade carries the server's token (the relay
// sends it), and the AudioSocket port is for the network Asterisk is on (docs/TELEPHONY.md).
#pragma once

#include <memory>

#include "server/call_params.h"
#include "server/media_stream_front.h"
#include "server/server_context.h"
#include "server/ws_admission.h"

namespace brisvox::server {

std::unique_ptr<StreamDialect> make_audiosocket_dialect();

class AudioSocketEndpoint final : public WsEndpoint {
 public:
  // How far ahead of real time the replies' audio goes: Asterisk plays what arrives at once, so
  // this is what the caller's phone gets early (its jitter buffer takes it), and what a barge-in
  // cannot take back.
  static constexpr int kPlayoutLeadMs = 60;

  explicit AudioSocketEndpoint(ServerContext& ctx) : ctx_(ctx) {}
  bool counts_as_stream() const override { return true; }
  std::optional<TelephonyProvider> telephony_provider() const override { return TelephonyProvider::kAudioSocket; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  CallRequest request_;
};

}  // namespace brisvox::server
