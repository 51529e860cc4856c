// /v1/tts on a WsConnection: text messages in, speech out (docs/PROTOCOL.md).
//
// The client sends {"type":"speak","text":...} (queued after what it spoke before),
// {"type":"cancel"} (barge-in: everything spoken so far stops within one sentence) and
// {"type":"close"} (finish what was spoken, then close 1000). The server answers with JSON text
// messages (ready, queued, audio, done, cancelled, error) and, after each "audio" message, one
// binary message: that piece of speech as 16-bit little-endian PCM at the session's rate.
//
// Flow control, never silent loss: the handler polls its speech session only while less than
// kMaxQueuedBytes wait to be written, so a client that reads slowly holds the synthesis back (the
// engine's back-pressure). Its messages are written only as the socket has room (ws_connection.h),
// so a client that stops reading never stops the server reading its "cancel"; one that reads
// nothing for limits.idle_timeout_s while audio waits for it is dropped ("slow_reader"); one that
// sends nothing (pings count) for that long while nothing is being spoken is closed with 1008
// "idle_timeout". A cancel drops the cancelled audio not yet written.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>

#include "brisvox/engine/engine.h"
#include "server/server_context.h"
#include "server/tts_params.h"
#include "server/ws_admission.h"
#include "server/ws_connection.h"

namespace brisvox::server {

class TtsHandler final : public WsHandler {
 public:
  // Bytes of messages waiting for the socket above which the speech session is not polled.
  static constexpr std::size_t kMaxQueuedBytes = 256 << 10;

  // `speech` was opened (before the upgrade, so that a refusal is an HTTP answer) with the
  // connection's wake-up as its on_events.
  TtsHandler(ServerContext& ctx, TtsOptions options, std::string voice_name, Speech speech);
  ~TtsHandler() override;

  WsSettings settings() const override;
  void on_open() override;
  void on_text(std::string message) override;
  void on_binary(std::span<const std::byte> chunk, bool last) override;
  void on_engine_events() override { pump(); }
  void on_sent() override { pump(); }  // room again: more of the speech session
  bool busy() const override;          // something spoken is not finished, or waits to be written
  void on_going_away() override;
  void on_closing() override;
  void on_closed(std::string_view why, bool opened) override;

 private:
  void pump();
  void handle_event(const Event& e);
  // Every utterance ends once, in order (done, cancelled or failed: `outcome` counts it).
  void end_utterance(std::uint32_t utterance, std::atomic<std::uint64_t>& outcome);
  void send(std::string text) { connection().send(std::move(text)); }
  void maybe_finish_closing();

  ServerContext& ctx_;
  const TtsOptions options_;
  const std::string voice_name_;
  Speech speech_;

  bool closing_when_done_ = false;  // {"type":"close"} or a shutdown: close once idle
  std::uint16_t end_code_ = kCloseNormal;
  std::string end_reason_;
  std::uint32_t last_spoken_ = 0;
  std::uint32_t last_ended_ = 0;  // utterances end in order
  std::uint32_t cancelled_upto_ = 0;
  std::map<std::uint32_t, std::chrono::steady_clock::time_point> accepted_;  // until their first audio
  double audio_s_ = 0.0;
};

// /v1/tts's part of an upgrade (ws_admission.h): the query, then a speech session of the server's
// voice. Its sessions are bounded by the voice's (ModelSpec::max_pending), not limits.max_streams.
class TtsEndpoint final : public WsEndpoint {
 public:
  explicit TtsEndpoint(ServerContext& ctx) : ctx_(ctx) {}
  bool counts_as_stream() const override { return false; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  TtsOptions options_;
};

}  // namespace brisvox::server
