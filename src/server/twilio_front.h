// Twilio Media Streams as a call's front (call_front.h; docs/TELEPHONY.md, "Twilio"): GET
// /v1/telephony/twilio (<Connect><Stream>, bidirectional) and /v1/telephony/twilio/listen
// (<Start><Stream>, listen-only: nothing is ever sent back).
//
// From Twilio: connected, then start (the stream's and call's ids, custom parameters, the media
// format, which must be audio/x-mulaw at 8000 Hz mono), then media (base64 mu-law of the inbound
// track, the caller's audio; an outbound track is not the caller and is ignored), dtmf, mark (the
// echo of one of ours), stop. To Twilio: only media (the call's speech, base64 mu-law with the
// streamSid), mark and clear.
//
// The application (serve --call-app) gets the call on a WebSocket of its own (call_app_link.h):
// call_start when Twilio's start arrives, then the call's events as /v1/call sends them, dtmf, and
// call_end; it sends speak, cancel, mark and hangup. Playback truth: after all of a reply's audio
// brisvox sends a Twilio mark, and the reply's speak_done goes to the application when Twilio
// echoes it (its audio has played); an application's mark likewise. A barge-in or a cancel sends
// clear; Twilio then echoes the marks of the audio it dropped, and a reply whose mark comes back so
// ends with "interrupted", not speak_done.
//
// Errors end that call only, with a log line that says why: a message that is not Twilio's
// (not JSON, bad base64, a bad field), one out of order (media before start, a second start), a
// media format brisvox does not take, a missing or wrong token, the application unreachable or
// gone (it is the operator's to fix: the call cannot go on without it).
//
// Authentication: Twilio drops a query string from a <Stream> url, so besides the server's usual
// token (Authorization header, ?token=), a <Parameter name="token"> of the stream is taken, checked
// when start arrives (it is not passed on to the application).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "server/call_app_link.h"
#include "server/call_front.h"
#include "server/call_params.h"
#include "server/server_context.h"
#include "server/telephony_metrics.h"
#include "server/twilio_messages.h"
#include "server/ws_admission.h"

namespace brisvox::server {

class TwilioFront final : public CallFront, private CallAppLink::Listener {
 public:
  // A Twilio message is small (a 20 ms media chunk is about 300 bytes; start with its parameters
  // a few KiB): anything larger is not Twilio's.
  static constexpr std::size_t kMaxMessageBytes = 128 << 10;
  // How long a close waits for Twilio to echo the marks of audio it still plays.
  static constexpr std::chrono::seconds kMarkEchoWait{10};
  // Marks awaiting Twilio's echo at most (a Twilio that never echoes must not grow the server):
  // beyond, the oldest one's message goes to the application unconfirmed.
  static constexpr std::size_t kMaxHeld = 256;

  // `authorized`: the upgrade carried the server's token (else start's token parameter must).
  // `strand`: the connection's (the application's link runs on it).
  TwilioFront(ServerContext& ctx, const boost::asio::any_io_executor& strand, AppUrl app, bool listen_only,
              bool authorized);
  ~TwilioFront() override;

  std::string_view kind() const override { return "twilio call"; }
  void adjust(WsSettings& s) const override;
  void on_open(WsConnection& c, CallControl& call, const CallReady& ready) override;
  void on_text(std::string message, CallControl& call) override;
  void on_binary(std::span<const std::byte> chunk, CallControl& call) override;
  void event(std::string message, SendQueue::Kind kind) override;
  void audio(std::uint32_t utterance, std::string bytes) override;
  std::size_t purge(std::uint32_t first, std::uint32_t last) override;
  void stopped() override;
  void speak_done(std::uint32_t utterance, std::string_view id_json, double duration_ms) override;
  void mark_reached(std::uint32_t utterance, std::string message) override;
  void interrupted(std::uint32_t utterance, std::string message) override;
  std::size_t queued_bytes() const override;
  bool busy() const override;
  bool reads_while_closing() const override { return true; }
  void on_closed(std::string_view why, bool opened) override;

 private:
  // A message for the application held until Twilio echoes the mark sent after its audio.
  struct Held {
    std::uint32_t utterance = 0;
    std::string message;    // speak_done, or the application's mark
    bool speak_done = false;
    std::string id_json;    // speak_done: the speak's id, for the "interrupted" that replaces it
    double duration_ms = 0;
    bool cleared = false;   // a clear was sent after it: its echo means dropped, not played
    std::chrono::steady_clock::time_point sent;
  };

  void on_app_open() override {}
  void on_app_message(std::string text) override;
  void on_app_gone(std::string why) override;

  void start(const TwilioMessage& m);
  // Ends the call for `error` (a log line, the provider's error count, the close).
  void fail(TelephonyError error, const std::string& why);
  Held& hold(std::uint32_t utterance, std::string message, bool speak_done);
  void to_app(std::string message);

  ServerContext& ctx_;
  const boost::asio::any_io_executor strand_;
  ProviderMetrics& metrics_;
  const AppUrl app_url_;
  const bool listen_only_;
  const bool authorized_;
  WsConnection* c_ = nullptr;
  CallControl* call_ = nullptr;
  std::shared_ptr<CallAppLink> link_;

  bool connected_ = false;  // Twilio's connected seen
  bool started_ = false;    // its start seen (the call counts from here)
  bool stopped_ = false;    // its stop seen
  std::string stream_sid_, call_sid_;
  std::uint64_t ignored_media_ = 0;  // media of a track that is not the caller's
  std::uint64_t next_mark_ = 1;
  std::map<std::uint64_t, Held> held_;  // by the number in our mark's name, oldest first
  std::string end_reason_;            // call_end's reason; empty: from how the connection ended
  std::string end_detail_;
};

// /v1/telephony/twilio's part of an upgrade (ws_admission.h): a call (its stream counts in
// limits.max_streams) at 8000 Hz mu-law, with turn ends and transcripts where the server has the
// models, spoken in the server's default voice.
class TwilioEndpoint final : public WsEndpoint {
 public:
  TwilioEndpoint(ServerContext& ctx, bool listen_only) : ctx_(ctx), listen_only_(listen_only) {}
  bool counts_as_stream() const override { return true; }
  bool token_in_first_message() const override { return true; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  const bool listen_only_;
  bool authorized_ = false;
  AppUrl app_;
  CallRequest request_;
};

}  // namespace brisvox::server
