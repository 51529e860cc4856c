// POST /v1/tts on one HTTP connection: a JSON body in, speech out (docs/PROTOCOL.md).
//
//   format "wav" (default): the whole reply as one WAV answer (Content-Length), sent once the
//     last sentence is synthesised;
//   format "raw": 16-bit little-endian PCM, chunked (Transfer-Encoding: chunked), one chunk per
//     piece of audio as the engine makes it, so the first sentence plays while the rest is
//     synthesised. The status line and headers wait for the first audio: an error before it (a
//     sentence too long, espeak-ng dying) is still a JSON error answer; an error after it ends the
//     connection without the last chunk, so that the client sees a truncated answer, never a
//     short one that looks complete.
//
// Everything runs on the connection's strand. The engine's wake-up only posts to it; a chunk is
// written only after the previous one was, and the speech session is not polled meanwhile, so a
// client that reads slowly holds the synthesis back (the engine's back-pressure) instead of
// growing the server's memory. The exchange keeps itself alive until it has answered; it is a
// Drainable of the server (a shutdown lets it finish, an abort drops it).
#pragma once

#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/serializer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "server/router.h"
#include "server/server_context.h"
#include "server/session_registry.h"
#include "server/engine_wakeup.h"
#include "server/tts_params.h"

namespace brisvox::server {

class TtsHttpExchange : public EngineListener, public Drainable, public std::enable_shared_from_this<TtsHttpExchange> {
 public:
  // On the strand, once: `answer` to send (an error, a WAV), or none when the exchange wrote its
  // answer itself; `keep_alive` false: close the connection.
  using Finish = std::function<void(std::optional<Response> answer, bool keep_alive)>;

  // `stream` is the connection's; it must outlive the exchange (Finish keeps its owner alive).
  TtsHttpExchange(boost::beast::tcp_stream& stream, ServerContext& ctx, Request request, Finish finish);
  ~TtsHttpExchange() override;

  // On the strand: parses, opens the speech session and speaks, or answers the refusal.
  void start();

  void on_engine_events() override;
  void go_away() override {}  // the reply in progress is finished: the drain waits for it
  void abort() override;

 private:
  void pump();  // polls the speech session while no write is pending
  void handle(const Event& e);
  void write_next();
  void on_written(boost::beast::error_code ec);
  void answer(std::optional<Response> response, bool keep_alive);
  Response json_error(int status, std::string_view code, std::string_view message);
  void record_first_audio();

  boost::beast::tcp_stream& stream_;
  ServerContext& ctx_;
  Request request_;
  Finish finish_;
  std::shared_ptr<TtsHttpExchange> self_;  // alive until answer()
  std::uint64_t id_ = 0;
  bool registered_ = false;
  bool counted_ = false;  // holds one of ctx.jobs_in_flight

  TtsHttpRequest params_;
  bool streaming_ = false;  // format raw over HTTP/1.1: chunked
  std::shared_ptr<EngineWakeup> wakeup_;
  std::shared_ptr<class HangupWatch> hangup_;  // the client leaving stops the synthesis
  Speech speech_;
  std::uint32_t utterance_ = 0;
  std::chrono::steady_clock::time_point accepted_;
  bool first_audio_recorded_ = false;
  std::uint64_t samples_ = 0;
  std::size_t sentences_ = 0;

  std::vector<std::int16_t> whole_;  // wav (or raw over HTTP/1.0): everything, sent at the end
  // Chunked: the header, then pieces, then the last chunk.
  boost::beast::http::response<boost::beast::http::empty_body> header_;
  std::optional<boost::beast::http::response_serializer<boost::beast::http::empty_body>> serializer_;
  bool header_sent_ = false;
  std::deque<std::string> pieces_;  // each one chunk's bytes: PCM, or an event (sse)
  std::string writing_piece_;
  bool last_queued_ = false;
  bool writing_ = false;
  bool done_ = false;
};

}  // namespace brisvox::server
