// A call on a WsConnection: the caller's audio in and the call's speech out, on one socket, with
// barge-in. The handler owns an engine Call (call.h) and its CallFront (call_front.h), the protocol
// the socket speaks: /v1/call's own (call_protocol.h, docs/PROTOCOL.md "Calls") or a telephony
// provider's (twilio_front.h, docs/TELEPHONY.md). It translates: it decides nothing the engine
// decides (what confirms the caller's speech, what stops, what is due when is the Call's).
//
// As /v1/call's protocol says it (a provider's front carries the same events elsewhere):
// In: binary messages are the caller's audio in the query's encoding and rate, taken in by the
// AudioIngress (as /v1/stream's); text messages are speak, cancel, mark and close (call_params.h).
// Out: the stream's events as /v1/stream sends them (speech_start, speech_end, vad, turn_end,
// turn_incomplete, transcript, overload, error), and for each speak: speak_started, its audio as
// binary messages in the call's encoding and rate (nothing else between them), then one of
// speak_done, interrupted (a barge-in or a cancel stopped it: how much of it was sent) or an error;
// a mark's name when playback reaches it.
//
// Barge-in: the engine stops the call's speech in the VAD frame that confirms the caller's speech
// and says so (kBargeIn): the handler drops every piece of stopped speech still waiting for the
// socket at once (a message being written is finished) and sends "interrupted" for the reply being
// heard; no audio of a stopped reply follows.
//
// Flow control, never silent loss: the ingress's for the caller's audio; the speech is polled only
// while less than kMaxQueuedBytes wait to be written (the engine's back-pressure holds the
// synthesis), the stream's events always. The Call hands speech out at most playout_lead_ms ahead
// of real time, so the socket carries about that much of it. Messages are written only as the
// socket has room (ws_connection.h): a client that stops reading never stops the server reading its
// "cancel"; one that reads nothing for limits.idle_timeout_s while messages wait is dropped.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>

#include "brisvox/engine/engine.h"
#include "server/audio_ingress.h"
#include "server/call_front.h"
#include "server/call_params.h"
#include "server/server_context.h"
#include "server/ws_admission.h"
#include "server/ws_connection.h"

namespace brisvox::server {

class CallHandler final : public WsHandler, private CallControl {
 public:
  // Bytes of messages waiting for the socket above which the call's speech is not polled.
  static constexpr std::size_t kMaxQueuedBytes = 256 << 10;

  // `call` was opened (before the upgrade, so that a full server answers 503) with the
  // connection's wake-up as its on_events. `strand`: the connection's. `front`: the protocol.
  CallHandler(ServerContext& ctx, const boost::asio::any_io_executor& strand, CallRequest request,
              std::string voice_name, Call call, std::unique_ptr<CallFront> front);
  ~CallHandler() override;

  WsSettings settings() const override;
  void on_open() override;
  void on_text(std::string message) override;
  void on_binary(std::span<const std::byte> chunk, bool last) override;
  void on_engine_events() override;
  void on_sent() override { on_engine_events(); }  // room again: more of the call's speech
  bool busy() const override;
  void on_going_away() override;
  void on_closing() override;
  void on_closed(std::string_view why, bool opened) override;
  std::string dropped_report(std::uint64_t num_dropped) override;

 private:
  // What the handler knows of one speak (or mark), by the call's utterance id.
  struct Speak {
    std::string id;      // the client's id, as JSON; a mark's name (as JSON) for a mark
    bool mark = false;
    bool started = false;  // speak_started sent
    bool ended = false;    // speak_done, interrupted or its error sent
    bool interrupted = false;  // "interrupted" sent (after a speak_done too, for a reply still playing)
    std::uint64_t bytes_queued = 0;  // of its audio handed to the connection and not purged
    std::chrono::steady_clock::time_point accepted;
  };

  // CallControl: what the front asks.
  void speak(const CallMessage& m) override;
  void mark(const std::string& name) override;
  void cancel() override;
  bool audio(std::span<const std::byte> bytes) override;
  void end(std::uint16_t code, std::string reason, bool drop_speech) override;

  void handle_event(const Event& e);
  void speech_audio(const Event& e, Speak& s);
  void barge_in(const Event& e);
  // Drops every stopped utterance's audio still waiting for the socket.
  void purge_stopped(std::uint32_t upto);
  void end_speak(std::uint32_t id);  // its last message was sent
  void interrupted(std::uint32_t id, std::string_view reason, const Event* barge);
  void advance();  // the ingress, the close sequence, reading on when allowed
  // Wakes on_engine_events() at `at` (the Call's next due time, a retry), or sooner if armed so.
  void wake_at(std::chrono::steady_clock::time_point at);
  double sent_ms(const Speak& s) const;
  void send(std::string message, SendQueue::Kind kind = SendQueue::Kind::kRequired);

  ServerContext& ctx_;
  std::unique_ptr<CallFront> front_;
  const CallRequest request_;
  const std::string voice_name_;
  Call call_;
  AudioIngress ingress_;
  const int speech_rate_hz_;
  const std::size_t bytes_per_sample_;

  std::map<std::uint32_t, Speak> speaks_;  // not yet ended, and marks not yet reached
  std::uint32_t last_spoken_ = 0;
  std::uint64_t num_speaks_ = 0, num_barge_ins_ = 0, num_segments_ = 0;
  double speech_sent_s_ = 0;

  // Closing ({"type":"close"}, a shutdown): the caller's stream is flushed, the speech finished.
  bool closing_ = false;
  bool flush_called_ = false;
  bool caller_ended_ = false;  // kEndOfStream seen
  std::uint16_t end_code_ = kCloseNormal;
  std::string end_reason_;

  boost::asio::steady_timer timer_;
  bool timer_armed_ = false;
  std::chrono::steady_clock::time_point timer_at_;
};

// /v1/call's part of an upgrade (ws_admission.h): the query, then the call (its stream counts in
// limits.max_streams and max_streams_per_client, its speech session in the voice's max_pending).
class CallEndpoint final : public WsEndpoint {
 public:
  explicit CallEndpoint(ServerContext& ctx) : ctx_(ctx) {}
  bool counts_as_stream() const override { return true; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  CallRequest request_;
};

// Opens the engine Call that `request` asks for (its voice, barge-in and playout lead), with
// `on_events` as its wake-up, and the handler that drives it with `front` as its protocol; or the
// refusal (400 for what the engine will not do, 503 when it is full).
std::variant<std::unique_ptr<WsHandler>, Refusal> open_call_handler(ServerContext& ctx,
                                                                    const boost::asio::any_io_executor& strand,
                                                                    CallRequest request,
                                                                    std::function<void()> on_events,
                                                                    std::unique_ptr<CallFront> front);

}  // namespace brisvox::server
