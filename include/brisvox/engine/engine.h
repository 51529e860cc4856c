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
#include "brisvox/engine/stream.h"

namespace brisvox {


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
  // The next stream of a session that `continues` (an open stream of this engine) was admitted for:
  // a session whose configuration changes mid-call (a Realtime session.update, a commit that ends
  // its stream). Neither max_streams nor admission control refuses it: the session is not a new
  // arrival, and the caller closes `continues` once this one takes over. Error(kInvalidArgument)
  // for a bad config or a `continues` that is closed, Error(kClosed) while shutting down.
  Stream open_stream(const StreamConfig& config, const Stream& continues);
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
  friend class Call;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
