// The engine: many concurrent audio streams, a registry of named models each served by a pool of
// inference workers, and cross-stream batching. This is brisvox's main API.
//
//   Engine engine(EngineConfig{});                // models, workers and sessions created here, eagerly
//   Stream s = engine.open_stream(StreamConfig{});  // throws Error(kOverloaded) at capacity
//   s.push(samples);                                // any thread; copies, never waits for inference
//   Event events[16];
//   for (std::size_t n; (n = s.poll(events)) > 0;) ...
//   s.flush();                                      // end of input: final events, then kEndOfStream
//
// Pipelines. A stream runs the stages its StreamConfig names: VAD always (it clocks the stream),
// then end-of-turn detection when asked for. Each stage uses a model of the registry by name
// (engine_config.h). Text-to-speech is a session kind of its own (open_speech, speech.h): text in,
// audio chunks out, on the same kind of pool.
//
// Threads. Inference runs only on the models' workers (one ONNX Runtime session each, one intra-op
// thread unless configured). A stream belongs to one VAD worker for its whole life, so its state is
// touched by one thread at a time; its turn analyses run on the turn model's workers and their
// verdicts come back through that VAD worker. push() and poll() of one stream may run on two
// different threads (one producer, one consumer), concurrently with everything else.
//
// Batching. A VAD worker gathers the ready frames of its streams (one frame per stream per batch;
// the model is recurrent) until it has max_batch of them or the oldest has waited
// max_gather_wait_us, packs them into preallocated tensors, runs the model once and unpacks the
// results into each stream's state and segmenter. Measured on 2-core x86-64 (docs/PERFORMANCE.md):
// the batched Silero graph (the v5/v6 aliases) costs ~40-50 us per Run at batch 1 and ~10-16 us per
// stream at batch 32 (the exported graph: ~120 us and 62-75 us).
//
// Backpressure, never silent loss. A stream buffers at most buffer_ms of audio; push() accepts
// what fits and returns that count (the rest is refused and counted, and an overload event
// follows). A frame that waits longer than latency_budget_ms raises an overload event. An engine
// with max_streams open streams, or whose VAD workers are over their latency budget, refuses
// open_stream() with Error(kOverloaded).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "brisvox/engine/call.h"
#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/engine_stats.h"
#include "brisvox/engine/events.h"
#include "brisvox/engine/speech.h"

namespace brisvox {

// What speech-to-text made of one segment (a kTranscript event's payload).
struct Transcript {
  std::string text;           // UTF-8, as faster-whisper's Segment.text (leading space); "" if no_speech
  float avg_logprob = 0.0f;   // of the sampled tokens
  float no_speech_prob = 0.0f;
  bool no_speech = false;     // Whisper's no-speech rule fired: the segment holds no speech
  bool hit_token_limit = false;  // the decoder stopped at its token limit, not at <|endoftext|>
  int window_frames = 0;      // the encoder window it was decoded in (3000 = 30 s)
};

class Engine;
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
  Stream(Engine* engine, std::shared_ptr<engine::StreamState> state);
  Engine* engine_ = nullptr;
  std::shared_ptr<engine::StreamState> state_;
};

class Engine {
 public:
  // Creates the workers and their sessions (Error kIo/kBadModel/kModelMismatch/...).
  explicit Engine(const EngineConfig& config);
  // Drains: every stream is flushed and processed before the workers stop.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Error(kOverloaded) at capacity, Error(kInvalidArgument) for a bad config.
  Stream open_stream(const StreamConfig& config);
  // A text-to-speech session on the Piper voice `config.model` (speech.h). Error(kInvalidArgument)
  // for a bad config or a model that is no Piper voice of this engine (naming its models),
  // Error(kOverloaded) when the voice's max_pending sessions are open, Error(kClosed) while
  // shutting down.
  Speech open_speech(const SpeechConfig& config);
  // A call: a stream and a speech session under one owner, with barge-in (call.h). The errors of
  // open_stream and open_speech, and Error(kInvalidArgument) for a bad CallConfig. Counts as one
  // stream of max_streams and one session of its voice's max_pending.
  Call open_call(const CallConfig& config);

  // Stops accepting streams and speech sessions, flushes every open stream and waits until all are
  // processed. Speech sessions are not waited for (their readers may have stopped reading): their
  // later speak() calls fail, and ~Engine abandons what they had not synthesised.
  void drain();

  EngineStats stats() const;
  // The configuration with every default filled in (model paths resolved, worker counts).
  const EngineConfig& config() const noexcept;
  // Inference threads of every model together.
  int num_workers() const noexcept;

 private:
  friend class Stream;
  friend class Call;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
