// One WebSocket client on /v1/stream: audio in, speech events out (docs/PROTOCOL.md).
//
// Threads. Everything here runs on the connection's strand. The engine stream's on_events
// callback (a worker thread) only posts a wake-up to that strand (EngineWakeup); the session then
// polls the stream's events, turns them into JSON messages and sends them. Inference never runs
// on a network thread, and a network thread never waits for inference.
//
// Flow control, never silent loss:
//   - Audio is decoded as it arrives (PcmDecoder: a sample may be split across messages) and
//     pushed into the engine stream. What the stream cannot take yet is held (pending); while any
//     is held the session does not read the socket, and it retries when the engine reports
//     progress or after a short timer. Held audio beyond limits.pending_ms ends the session
//     ("rate_limited", 1008); held audio the engine does not take within pending_timeout_ms ends
//     it too ("overloaded", 1013).
//   - A client faster than limits.max_rate x real time (beyond a burst of limits.burst_s) is
//     paced: the session stops reading its socket until the token bucket allows more.
//   - Outgoing messages wait in a bounded SendQueue: "vad" messages are dropped first (counted and
//     reported in an overload message); a speech event that would overflow closes with 1008.
//   - A message is written only while the kernel send buffer has room for it (unsent bytes below
//     limits.ws_send_buffer_bytes, half of what Linux reserves for that SO_SNDBUF): a client that
//     does not read must never leave a write pending on a full socket, because Beast answers a
//     ping by writing a pong before it reads on, and that pong would wait behind the pending
//     write: the read loop would stop, and the client's audio with it.
#pragma once

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/websocket/stream.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "brisvox/audio/pcm.h"
#include "brisvox/engine/engine.h"
#include "server/query_params.h"
#include "server/rate_limiter.h"
#include "server/send_queue.h"
#include "server/server_log.h"
#include "server/server_context.h"
#include "server/session_registry.h"
#include "server/engine_wakeup.h"

namespace brisvox::server {

class WsSession : public Drainable, public EngineListener, public std::enable_shared_from_this<WsSession> {
 public:
  // `stream` was opened with on_events = wakeup->notify (before the upgrade, so that a full
  // server answers 503 instead of accepting and closing). The session holds one of
  // ServerContext::streams_open, released when it is destroyed.
  WsSession(boost::beast::tcp_stream&& socket, ServerContext& ctx, AudioRequest request, Stream stream,
            std::shared_ptr<EngineWakeup> wakeup, std::string peer);
  ~WsSession() override;

  // Keeps `token` (a slot of a limit) until the session is destroyed.
  void hold(std::shared_ptr<void> token) { held_ = std::move(token); }

  // Completes the WebSocket handshake of `upgrade` and starts reading.
  void start(boost::beast::http::request<boost::beast::http::string_body> upgrade);

  void go_away() override;
  void abort() override;

  // Strand only (EngineWakeup): the engine has events for this session.
  void on_engine_events() override;

 private:
  enum class Phase { kHandshake, kOpen, kClosing, kClosed };
  enum class EndRequest { kNone, kFlush, kClose };  // what the current engine stream is ending for

  // A log line of this stream: its id and the client's tag as fields (server_log.h).
  template <typename... Args>
  void log_stream(fmt::format_string<Args...> format, Args&&... args) const {
    log_record(fmt::format(format, std::forward<Args>(args)...),
               {{"stream", static_cast<std::int64_t>(id_)}, {"tag", std::string_view(request_.tag)}});
  }
  void on_accept(boost::beast::error_code ec);
  void read_more();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  void handle_control(const std::string& text);
  void handle_audio(std::span<const std::byte> bytes);
  void handle_event(const Event& event);
  void on_end_of_stream();
  bool open_engine_stream();
  void advance();  // pushes held audio, flushes when asked, reads more when allowed
  void push_pending();
  void arm_retry(std::chrono::microseconds delay);
  void arm_idle_timer();
  void send(std::string message, SendQueue::Kind kind = SendQueue::Kind::kRequired);
  // Queues an overload message counting the "vad" messages dropped since the last one. True if
  // one was queued.
  bool report_drops();
  void do_write();
  // True if the socket's kernel send buffer can take `bytes` more now without filling up.
  bool socket_has_room(std::size_t bytes);
  void on_write(boost::beast::error_code ec);
  // Sends an error event, then closes with `close_code` once it is written.
  void fail(std::string_view code, std::uint16_t close_code, const std::string& message);
  void begin_close(std::uint16_t close_code, std::string reason);
  void start_close_handshake();
  void drop_connection();
  void finish(std::string_view why);
  // Counts the held audio (decoded, not yet taken by the engine stream) as rejected and drops it.
  void discard_held(AudioLoss why);
  double timeline_s(double stream_s) const;  // a time of the current engine stream on the session's timeline
  double stream_time_s() const;              // where the current engine stream ends so far

  boost::beast::websocket::stream<boost::beast::tcp_stream> ws_;
  ServerContext& ctx_;
  const AudioRequest request_;
  const std::uint64_t id_;
  const std::string peer_;
  Stream stream_;
  std::shared_ptr<EngineWakeup> wakeup_;
  std::shared_ptr<void> held_;  // hold(): the client address's stream slot
  int model_rate_hz_;
  PcmDecoder decoder_;
  RateLimiter rate_;
  SendQueue queue_;

  Phase phase_ = Phase::kHandshake;
  EndRequest end_ = EndRequest::kNone;
  bool flush_called_ = false;
  bool going_away_ = false;
  std::uint16_t close_code_ = 1000;
  std::string close_reason_;
  bool reading_ = false;
  bool writing_ = false;
  bool close_started_ = false;
  AudioLoss loss_reason_ = AudioLoss::kDisconnected;  // what held audio is lost to if the session ends now

  // Reading: one chunk at a time (about 250 ms of audio), counted against the message limit.
  std::vector<std::byte> read_buf_;
  std::size_t read_chunk_bytes_;
  std::size_t message_bytes_ = 0;
  std::string text_buf_;
  std::vector<float> decoded_;

  // Audio decoded but not yet taken by the engine stream: pending_[pending_begin_, end).
  std::vector<float> pending_;
  std::size_t pending_begin_ = 0;
  std::size_t pending_limit_samples_;
  std::chrono::steady_clock::time_point pending_since_;

  // Timeline: the current engine stream starts at offset_s_ (a flush continues the timeline, a
  // reset restarts it); stream_samples_ input samples were given to it so far.
  double offset_s_ = 0;
  std::uint64_t stream_samples_ = 0;
  double total_audio_s_ = 0;
  std::uint64_t num_segments_ = 0;

  boost::asio::steady_timer retry_timer_;
  bool retry_armed_ = false;
  boost::asio::steady_timer idle_timer_;
  std::chrono::steady_clock::time_point last_activity_;
  boost::asio::steady_timer close_timer_;
  // Retries do_write() while the kernel send buffer is full (see socket_has_room()).
  boost::asio::steady_timer write_timer_;
  bool write_timer_armed_ = false;
  // Unsent bytes below which a message may be written: limits.ws_send_buffer_bytes, or half the
  // send buffer the kernel granted if that is less (start()).
  std::size_t send_room_bytes_ = 0;
  std::chrono::milliseconds write_backoff_{0};
};

}  // namespace brisvox::server
