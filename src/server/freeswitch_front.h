// FreeSWITCH's mod_audio_fork (docs/TELEPHONY.md, "FreeSWITCH"): GET /v1/telephony/freeswitch (the
// caller heard, the replies sent back as playAudio) and /v1/telephony/freeswitch/listen (nothing is
// ever sent back), each a call whose front is a MediaStreamFront (media_stream_front.h) speaking
// the module's dialect (freeswitch_messages.h): the caller's 16-bit linear PCM in binary frames, the
// replies as base64 raw audio in playAudio text frames, killAudio for barge-in, disconnect when the
// application hangs up.
//
// The module plays nothing itself: it writes each playAudio to a file and raises an event, and the
// FreeSWITCH application plays the file. So a reply goes in clips of kClipMs (files, not frames),
// paced by the call's playout lead; and as the module echoes nothing, a reply's speak_done and an
// application's mark go out when their audio has been sent, not when it has played.
//
// The rate is the start command's (8k or 16k), which the module does not send: the url says it,
// ?rate=8000|16000 (default 8000). Authentication: ?token= in the url (the module sends no header
// of its own), or a "token" key of the metadata (checked when the call starts, not passed on). The
// subprotocol the module asks for (audio.drachtio.org, or its MOD_AUDIO_FORK_SUBPROTOCOL_NAME) is
// answered.
#pragma once

#include <memory>
#include <string>

#include "server/call_params.h"
#include "server/media_stream_front.h"
#include "server/server_context.h"
#include "server/ws_admission.h"

namespace brisvox::server {

// `subprotocol`: the one the upgrade asked for and is answered with ("" when it asked for none).
std::unique_ptr<StreamDialect> make_freeswitch_dialect(int rate_hz, std::string subprotocol);

// /v1/telephony/freeswitch's part of an upgrade (ws_admission.h): a call (its stream counts in
// limits.max_streams) at the url's rate (telephony_call_request).
class FreeswitchEndpoint final : public WsEndpoint {
 public:
  // The length of one playAudio clip: each is a file for FreeSWITCH to open and play, so 20 ms
  // frames would be 50 files a second; half the playout lead (500 ms) keeps one clip queued
  // behind the one playing, so the application never waits for the next file.
  static constexpr int kClipMs = 250;

  FreeswitchEndpoint(ServerContext& ctx, bool listen_only) : ctx_(ctx), listen_only_(listen_only) {}
  bool counts_as_stream() const override { return true; }
  std::optional<TelephonyProvider> telephony_provider() const override { return TelephonyProvider::kFreeswitch; }
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
