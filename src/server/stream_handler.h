// /v1/stream on a WsConnection: audio in, speech events out (docs/PROTOCOL.md).
//
// The handler owns the client's engine stream. Binary messages are audio in the query's encoding,
// taken in by the AudioIngress (audio_ingress.h: decoded as they arrive, held while the engine
// cannot take them, the client paced) and pushed into the stream; text messages are control
// messages (flush, reset, close); the stream's events become JSON messages (messages.h), its
// per-frame "vad" probabilities droppable.
//
// Flow control, never silent loss: the ingress's (reading pauses while audio is held or the
// client is ahead of its pace; held audio over the server's limits ends the session).
//   - A flush or a close waits for the stream's final events with reading paused; none of that
//     time counts as idle (ws_connection.h), nor do pings: a client that only pings holds a stream
//     slot without using it, and is closed at the idle timeout like a silent one (issue 13).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "brisvox/engine/engine.h"
#include "server/audio_ingress.h"
#include "server/metrics.h"
#include "server/query_params.h"
#include "server/server_context.h"
#include "server/ws_admission.h"
#include "server/ws_connection.h"

namespace brisvox::server {

class StreamHandler final : public WsHandler {
 public:
  // `stream` was opened (before the upgrade, so that a full server answers 503 instead of
  // accepting and closing) with `on_events` as its on_events, which the streams the handler opens
  // after a flush or a reset get too. `strand`: the connection's.
  StreamHandler(ServerContext& ctx, const boost::asio::any_io_executor& strand, AudioRequest request, Stream stream,
                std::function<void()> on_events);
  ~StreamHandler() override;

  WsSettings settings() const override;
  void on_open() override;
  void on_text(std::string message) override;
  void on_binary(std::span<const std::byte> chunk, bool last) override;
  void on_engine_events() override;
  void on_going_away() override;
  void on_closing() override;
  void on_closed(std::string_view why, bool opened) override;
  std::string dropped_report(std::uint64_t num_dropped) override;

 private:
  enum class EndRequest { kNone, kFlush, kClose };  // what the current engine stream is ending for

  void handle_control(const std::string& text);
  void handle_event(const Event& event);
  void on_end_of_stream();
  bool reopen_engine_stream();
  void advance();  // pushes held audio, flushes when asked, reads on when allowed
  void arm_retry(std::chrono::microseconds delay);
  void send(std::string message, SendQueue::Kind kind = SendQueue::Kind::kRequired);
  double timeline_s(double stream_s) const;  // a time of the current engine stream on the session's timeline
  double stream_time_s() const;              // where the current engine stream ends so far

  ServerContext& ctx_;
  const AudioRequest request_;
  Stream stream_;
  std::function<void()> on_events_;
  AudioIngress ingress_;

  EndRequest end_ = EndRequest::kNone;
  bool flush_called_ = false;
  std::uint16_t end_code_ = kCloseNormal;  // the close code once the stream has ended (kClose)
  std::string end_reason_;

  // Timeline: the current engine stream starts at offset_s_ (a flush continues the timeline, a
  // reset restarts it); stream_samples_ input samples were given to it so far.
  double offset_s_ = 0;
  std::uint64_t stream_samples_ = 0;
  std::uint64_t num_segments_ = 0;

  boost::asio::steady_timer retry_timer_;
  bool retry_armed_ = false;
};

// /v1/stream's part of an upgrade (ws_admission.h): the query, then the engine stream. Its
// sessions count in limits.max_streams and max_streams_per_client.
class StreamEndpoint final : public WsEndpoint {
 public:
  explicit StreamEndpoint(ServerContext& ctx) : ctx_(ctx) {}
  bool counts_as_stream() const override { return true; }
  std::optional<Refusal> parse(const Request& upgrade) override;
  std::variant<std::unique_ptr<WsHandler>, Refusal> open(const boost::asio::any_io_executor& strand,
                                                         std::function<void()> on_events) override;

 private:
  ServerContext& ctx_;
  AudioRequest request_;
};

}  // namespace brisvox::server
