// One WebSocket client on /v1/tts: text messages in, speech out (docs/PROTOCOL.md).
//
// The client sends {"type":"speak","text":...} (queued after what it spoke before),
// {"type":"cancel"} (barge-in: everything spoken so far stops within one sentence) and
// {"type":"close"} (finish what was spoken, then close 1000). The server answers with JSON text
// messages (ready, queued, audio, done, cancelled, error) and, after each "audio" message, one
// binary message: that piece of speech as 16-bit little-endian PCM at the session's rate.
//
// Threads: everything runs on the connection's strand; the engine's wake-up only posts to it.
// Flow control, never silent loss: the session polls its speech session only while less than
// kMaxQueuedBytes wait to be written, so a client that reads slowly holds the synthesis back (the
// engine's back-pressure). A client that reads nothing for limits.idle_timeout_s while audio
// waits for it is dropped; one that sends nothing for that long while nothing is being spoken is
// closed with 1008 "idle_timeout". A cancel drops the cancelled audio not yet written.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "brisvox/engine/engine.h"
#include "server/server_context.h"
#include "server/session_registry.h"
#include "server/server_log.h"
#include "server/engine_wakeup.h"
#include "server/tts_params.h"

namespace brisvox::server {

class TtsWsSession : public EngineListener, public Drainable, public std::enable_shared_from_this<TtsWsSession> {
 public:
  // Bytes of messages waiting for the socket above which the speech session is not polled.
  static constexpr std::size_t kMaxQueuedBytes = 256 << 10;

  // `speech` was opened with on_events = wakeup->notify (before the upgrade, so that a refusal is
  // an HTTP answer).
  TtsWsSession(boost::beast::tcp_stream&& socket, ServerContext& ctx, TtsOptions options, std::string voice_name,
               Speech speech, std::shared_ptr<EngineWakeup> wakeup, std::string peer);
  ~TtsWsSession() override;

  void start(boost::beast::http::request<boost::beast::http::string_body> upgrade);

  void on_engine_events() override;
  void go_away() override;
  void abort() override;

 private:
  enum class Phase { kHandshake, kOpen, kClosing, kClosed };
  struct Outgoing {
    bool binary = false;
    std::uint32_t utterance = 0;  // audio of this utterance (0: not audio)
    std::string data;
  };

  // A log line of this stream: its id and the client's tag as fields (server_log.h).
  template <typename... Args>
  void log_stream(fmt::format_string<Args...> format, Args&&... args) const {
    log_record(fmt::format(format, std::forward<Args>(args)...),
               {{"stream", static_cast<std::int64_t>(id_)}, {"tag", std::string_view(options_.tag)}});
  }
  void on_accept(boost::beast::error_code ec);
  void read_more();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  void handle_message(const std::string& text);
  void pump();
  void handle_event(const Event& e);
  void send(Outgoing message);
  void do_write();
  void on_write(boost::beast::error_code ec);
  bool busy() const;  // something spoken is not finished, or waits to be written
  void maybe_finish_closing();
  void fail(std::string_view code, std::uint16_t close_code, const std::string& message);
  void begin_close(std::uint16_t close_code, std::string reason);
  void arm_idle_timer();
  void drop_connection();
  void finish(std::string_view why);

  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  ServerContext& ctx_;
  const TtsOptions options_;
  const std::string voice_name_;
  const std::uint64_t id_;
  const std::string peer_;
  Speech speech_;
  std::shared_ptr<EngineWakeup> wakeup_;

  Phase phase_ = Phase::kHandshake;
  bool reading_ = false;
  bool writing_ = false;
  bool close_started_ = false;
  bool closing_when_done_ = false;  // {"type":"close"} or a shutdown: close once idle
  std::uint16_t close_code_ = 1000;
  std::string close_reason_;
  boost::beast::flat_buffer read_buf_;

  std::deque<Outgoing> queue_;
  std::size_t queued_bytes_ = 0;
  std::uint32_t last_spoken_ = 0;
  std::uint32_t last_ended_ = 0;     // utterances end in order
  std::uint32_t cancelled_upto_ = 0;
  std::map<std::uint32_t, std::chrono::steady_clock::time_point> accepted_;  // until their first audio
  double audio_s_ = 0.0;

  boost::asio::steady_timer idle_timer_;
  std::chrono::steady_clock::time_point last_activity_;
  boost::asio::steady_timer close_timer_;
  boost::asio::steady_timer write_timer_;  // a write that does not complete: the client stopped reading
};

}  // namespace brisvox::server
