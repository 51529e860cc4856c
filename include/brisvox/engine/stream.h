// A stream: one caller's audio in, its events out (engine.h opens it: Engine::open_stream). The
// stages it runs are those its StreamConfig names (engine_config.h); its events are events.h's.
// push() from the producer thread, poll() and the read_*() of payloads from the consumer thread;
// both never wait for inference.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/events.h"
#include "brisvox/engine/transcript.h"

namespace brisvox {

class Engine;
class Call;
namespace engine {
struct StreamState;
}

// A handle to one open stream. Move-only; destroying it closes the stream.
class Stream {
 public:
  Stream() = default;
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;
  ~Stream();

  explicit operator bool() const noexcept { return state_ != nullptr; }
  std::uint64_t id() const noexcept;
  // The stream's configuration as the engine runs it: the one given to open_stream with what the
  // engine decided filled in (VadOptions::model_rate_hz; max_speech_s capped at the stt stage's
  // window). Valid while the stream is open.
  const StreamConfig& config() const;
  // The rate its VAD runs at (8000 or 16000): the rate of its events' times and segment audio.
  int model_rate_hz() const noexcept;

  // Copies samples (at the stream's sample_rate_hz, [-1, 1]) into the stream. Never blocks on
  // inference. Returns how many were accepted: all unless the stream's buffer is full, and then
  // the rest is refused (counted in samples_rejected; one overload event per run of refused
  // pushes). NaN/Inf samples throw
  // Error(kBadAudio) and nothing is accepted. After flush() or close(): Error(kClosed).
  std::size_t push(std::span<const float> samples);
  // How many samples push() would accept right now (producer thread). A feeder that runs faster
  // than real time (a file, a benchmark) pushes at most this much, so nothing is refused.
  std::size_t writable();
  // Waits until push() can accept at least `min_samples` (capped at what the buffer can ever
  // hold), or the timeout. Producer thread. True if there is room.
  bool wait_writable(std::size_t min_samples, std::chrono::microseconds timeout);

  // Whether flush() would return at once now: true unless a resampled stream's resampler still
  // owes output the buffer has no room for yet (flush() then waits, up to a second, for the worker
  // to make room). A caller that must not block (a network thread) flushes once this is true.
  bool can_flush();
  // End of input: the worker processes what is buffered (the last partial frame zero-padded),
  // emits the final speech_end if speech was open, then kEndOfStream. Idempotent. For a
  // resampled stream it may wait (up to 1 s) for room for the resampler's tail.
  void flush();

  // Moves up to out.size() pending events into `out`; returns how many. Never blocks.
  std::size_t poll(std::span<Event> out);
  // The payload of `event` (payload kAttached or kTruncated), copied into `out`, which must hold
  // event.payload_bytes; returns the bytes copied. Payloads wait in the order of their events:
  // older ones the reader skipped are discarded (counted in EngineStats::payloads_unread). Returns
  // 0 when the payload is gone (already read, or skipped), or `out` is too small (the payload stays).
  // Consumer thread, like poll(). Never blocks, never allocates.
  std::size_t read_payload(const Event& event, std::span<std::byte> out);
  // The same for audio payloads (a segment: float32 samples at the stream's model rate); empty
  // when the payload is gone. Allocates the vector.
  std::vector<float> read_audio_payload(const Event& event);
  // The transcript a kTranscript event carries; nullopt when its payload is gone. Allocates.
  std::optional<Transcript> read_transcript(const Event& event);
  // Waits until an event is pending or the timeout. True if one is. Consumer thread; sleeps until
  // the worker that writes the event wakes it (no polling).
  bool wait_events(std::chrono::microseconds timeout);

  // Message of the last kError event ("" if none). Valid until the next error of this stream.
  std::string last_error() const;

  // Stops the stream now: buffered audio that was not flushed is discarded, pending events too.
  // To keep the final events, flush() and poll() until kEndOfStream first. Idempotent.
  void close();

 private:
  friend class Engine;
  friend class Call;
  explicit Stream(std::shared_ptr<engine::StreamState> state);
  std::shared_ptr<engine::StreamState> state_;
};

}  // namespace brisvox
