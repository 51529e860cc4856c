// A client's audio on its way into an engine stream (or a call's listening side): the one intake of
// every WebSocket protocol that takes audio (/v1/stream, /v1/call). Binary messages are decoded as
// they arrive (PcmDecoder: a sample may be split across messages) and held until the engine takes
// them; the handler pauses reading while audio is held, or while the client is ahead of its pace.
//
// Flow control, never silent loss:
//   - push() gives the engine only what it takes (a refused push would count as rejected samples
//     and raise an overload event, while nothing is lost here); the rest stays held, and the
//     handler retries when the engine reports progress or after a short timer.
//   - Held audio beyond limits.pending_ms fails the session ("rate_limited", 1008); held audio the
//     engine takes none of within pending_timeout_ms fails it too ("overloaded", 1013).
//   - A client faster than limits.max_rate x real time (beyond a burst of limits.burst_s) is paced
//     (pace()): the handler stops reading until the token bucket allows more.
// Every decoded sample is counted as received (ServerMetrics::audio_samples_received) and ends
// taken by the engine, or dropped and counted as lost (discard()).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "brisvox/audio/pcm.h"
#include "brisvox/error.h"
#include "server/metrics.h"
#include "server/rate_limiter.h"
#include "server/server_context.h"
#include "server/ws_connection.h"

namespace brisvox::server {

// Why the session must end: the error event's code and message, and the close code.
struct IngressFailure {
  std::string code;
  std::uint16_t close_code;
  std::string message;
};

class AudioIngress {
 public:
  AudioIngress(ServerContext& ctx, SampleEncoding encoding, int sample_rate_hz);

  // About 250 ms of audio: what the connection reads at a time.
  std::size_t read_chunk_bytes() const noexcept { return read_chunk_bytes_; }

  // Decodes `bytes` (the next of the client's audio) and holds the samples. A failure: bad audio,
  // or more held than the server keeps.
  std::optional<IngressFailure> receive(std::span<const std::byte> bytes);

  // Gives what is held to `sink` (Stream or Call: writable(), push()) as far as it takes it.
  template <typename Sink>
  std::optional<IngressFailure> push(Sink& sink);

  // One flow step of a handler: push(), then what the connection does about it. kFailed: the
  // connection is failed (error event, close). kHeld: audio is still held, reading is paused and the
  // handler retries soon. kClear: nothing is held.
  enum class Flow { kFailed, kHeld, kClear };
  template <typename Sink>
  Flow feed(Sink& sink, WsConnection& c);

  bool holding() const noexcept { return pending_begin_ < pending_.size(); }
  // A failure when the held audio has waited longer than pending_timeout_ms.
  std::optional<IngressFailure> check_held() const;
  // How long the client must wait before more of its audio is read (0: none).
  std::chrono::microseconds pace() { return rate_.wait_time(); }
  // Counts what is held as lost to `why` and drops it.
  void discard(AudioLoss why);
  // The same for a connection that has ended the way `ending` says.
  void discard(WsConnection::Ending ending);
  // A new stream: forgets a partial sample (the held audio: discard() first).
  void reset_decoder() noexcept { decoder_.reset(); }

  // Input samples decoded so far (since construction), and their seconds.
  std::uint64_t samples() const noexcept { return samples_; }
  double seconds() const noexcept { return static_cast<double>(samples_) / sample_rate_hz_; }

 private:
  std::optional<IngressFailure> push_failed(const Error& e);
  void compact();

  ServerContext& ctx_;
  const int sample_rate_hz_;
  PcmDecoder decoder_;
  RateLimiter rate_;
  const std::size_t read_chunk_bytes_;
  std::vector<float> decoded_;
  // Audio decoded but not yet taken by the engine: pending_[pending_begin_, end).
  std::vector<float> pending_;
  std::size_t pending_begin_ = 0;
  std::size_t pending_limit_samples_;
  std::chrono::steady_clock::time_point pending_since_;
  std::uint64_t samples_ = 0;
};

template <typename Sink>
std::optional<IngressFailure> AudioIngress::push(Sink& sink) {
  while (pending_begin_ < pending_.size()) {
    const std::size_t room = std::min(sink.writable(), pending_.size() - pending_begin_);
    if (room == 0) break;
    std::size_t accepted = 0;
    try {
      accepted = sink.push(std::span(pending_.data() + pending_begin_, room));
    } catch (const Error& e) {
      return push_failed(e);
    }
    pending_begin_ += accepted;
    if (accepted < room) break;
  }
  compact();
  return std::nullopt;
}

template <typename Sink>
AudioIngress::Flow AudioIngress::feed(Sink& sink, WsConnection& c) {
  std::optional<IngressFailure> failure = push(sink);
  if (!failure && holding()) failure = check_held();
  if (failure) {
    c.fail(failure->code, failure->close_code, failure->message);
    return Flow::kFailed;
  }
  if (!holding()) return Flow::kClear;
  c.pause_reading();
  return Flow::kHeld;
}

}  // namespace brisvox::server
