// The engine: many concurrent audio streams, a fixed pool of inference workers, and cross-stream
// batching. This is brisvox's main API.
//
//   Engine engine(EngineConfig{});                // workers and sessions created here, eagerly
//   Stream s = engine.open_stream(StreamConfig{});  // throws Error(kOverloaded) at capacity
//   s.push(samples);                                // any thread; copies, never waits for inference
//   Event events[16];
//   for (std::size_t n; (n = s.poll(events)) > 0;) ...
//   s.flush();                                      // end of input: final events, then kEndOfStream
//
// Threads. Inference runs only on the engine's workers (N threads, one ONNX Runtime session each,
// one intra-op thread unless configured). A stream belongs to one worker for its whole life, so
// its state is touched by one thread at a time. push() and poll() of one stream may run on two
// different threads (one producer, one consumer), concurrently with everything else.
//
// Batching. A worker gathers the ready frames of its streams (one frame per stream per batch; the
// model is recurrent) until it has max_batch of them or the oldest has waited max_gather_wait_us,
// packs them into preallocated tensors, runs the model once and unpacks the results into each
// stream's state and segmenter. Measured on 2-core x86-64 (docs/PERFORMANCE.md): the batched
// Silero graph (the v5/v6 aliases) costs ~40-50 us per Run at batch 1 and ~10-16 us per stream at
// batch 32 (the exported graph: ~120 us and 62-75 us).
//
// Backpressure, never silent loss. A stream buffers at most buffer_ms of audio; push() accepts
// what fits and returns that count (the rest is refused and counted, and an overload event
// follows). A frame that waits longer than latency_budget_ms raises an overload event. An engine
// with max_streams open streams, or whose workers are over their latency budget, refuses
// open_stream() with Error(kOverloaded).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "brisvox/engine/events.h"
#include "brisvox/models/vad/segmenter_params.h"
#include "brisvox/runtime/session_config.h"

namespace brisvox {

struct EngineConfig {
  std::string vad_model = "v6";  // v5, v6 or a path (resolve_vad_model)
  int num_workers = 0;           // 0: one per core (std::thread::hardware_concurrency)
  int max_batch = 32;            // frames per Run; see docs/PERFORMANCE.md for the choice
  int max_gather_wait_us = 2000; // how long a worker waits to fill a batch
  int max_streams = 4096;        // open streams at once; open_stream() refuses beyond
  int latency_budget_ms = 100;   // queue delay that counts as overload
  // When the workers' recent queue delay (p99 over the last second) exceeds the latency budget,
  // refuse new streams rather than degrade the open ones.
  bool admission_control = true;
  // Deadline of one model run (VAD batch or Smart Turn batch). A run still in flight after it is
  // cancelled through ONNX Runtime's terminate flag: its streams get a kError event with
  // ErrorCode::kInferenceTimeout (the frame counts as silence) and the worker goes on. A normal
  // batch takes well under 10 ms, so only a stuck machine or a pathological model reaches the
  // default. 0: off (no watchdog thread); else 10 to 600000. Costs one thread per engine.
  int run_timeout_ms = 2000;
  SessionConfig session;

  // End-of-turn detection (Smart Turn v3). Empty: off, and streams may not ask for it.
  std::string turn_model;
  int num_turn_workers = 1;    // threads that run Smart Turn (features + model), apart from VAD
  int turn_max_batch = 4;      // analyses per Smart Turn run
  int max_pending_turns = 16;  // analyses in flight across all streams (512 KiB of audio each)
  SessionConfig turn_session;  // e.g. intra_op_threads for the turn model

  void validate() const;  // Error(kInvalidArgument) naming the field
};

struct StreamConfig {
  // The resampler's buffers grow with the rate ratio (16000 / 1 Hz would be hundreds of MB per
  // stream), so a stream's rate is bounded below as well as above.
  static constexpr int kMinSampleRateHz = 1000;
  static constexpr int kMaxSampleRateHz = 768000;

  int sample_rate_hz = 16000;  // rate of the pushed samples: 1000 to 768000; 8000/16000 native, others resampled
  int model_rate_hz = 0;       // 0: 8000 for 8 kHz input, else 16000
  SegmenterParams vad;
  bool emit_probabilities = false;  // a kVadProbability event per model frame
  // kTurnEnd / kTurnIncomplete events (needs EngineConfig::turn_model). Keeps the last 9 s of
  // audio for the stream (about 576 KiB at 16 kHz).
  bool detect_turns = false;
  TurnParams turn;
  // Offline use (files, tests): hold the stream's frames while an analysis is pending, so that the
  // result does not depend on how fast the analysis runs. Live streams leave it off: speech that
  // resumes while an analysis runs cancels it, as in Pipecat.
  bool turn_wait_for_verdict = false;
  int buffer_ms = 256;              // audio a stream may hold before push() refuses samples
  // Called on a worker thread whenever new events are ready to poll(); must be quick and must not
  // call into the engine (post a notification to your own loop). May be empty.
  std::function<void()> on_events;
  void validate() const;
};

// Counters and distributions, summed over workers. Cheap to read (no locks on the hot path).
struct EngineStats {
  struct Distribution {  // microseconds
    std::uint64_t count = 0;
    double p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0, max_us = 0, mean_us = 0;
    // Cumulative counts at the bucket bounds (Prometheus-style): (upper bound us, count <= bound).
    std::vector<std::pair<double, std::uint64_t>> buckets;
    double sum_us = 0;
  };
  int num_workers = 0;
  int active_streams = 0;
  std::uint64_t streams_opened = 0;
  std::uint64_t streams_refused = 0;
  std::uint64_t frames_processed = 0;
  std::uint64_t batches = 0;
  std::uint64_t samples_rejected = 0;  // refused by push() (stream buffer full)
  // What became of the input of closed streams, in input-rate samples (each stream's own rate).
  // Once a stream is closed, every sample its push() accepted is in exactly one of these; a stream
  // still open is in none yet. With resampling, a stream closed before its flush completed is split
  // by the rate ratio (src/engine/input_tally.h).
  std::uint64_t samples_analysed = 0;   // given to model runs that succeeded (flush padding excluded)
  std::uint64_t samples_failed = 0;     // given to model runs that failed (kError events)
  std::uint64_t samples_discarded = 0;  // buffered, unanalysed, when close() came before the flush completed
  std::uint64_t events_dropped = 0;    // probability events a slow reader missed (never speech events)
  std::uint64_t overload_events = 0;
  std::uint64_t run_errors = 0;    // failed VAD runs, timeouts included
  std::uint64_t run_timeouts = 0;  // VAD runs cancelled after run_timeout_ms
  std::vector<std::uint64_t> batch_size_counts;  // [b] = batches of size b (index 0 unused)
  Distribution queue_delay;    // frame complete -> its batch starts
  Distribution inference;      // one Run (pack + run + unpack)
  Distribution added_latency;  // frame complete -> its events are available
  std::uint64_t turn_analyses = 0;
  std::uint64_t turn_errors = 0;    // failed Smart Turn runs, timeouts included
  std::uint64_t turn_timeouts = 0;  // Smart Turn runs cancelled after run_timeout_ms
  Distribution turn_latency;   // analysis requested -> verdict back to the stream
  Distribution turn_features;  // log-mel of one turn
  Distribution turn_inference; // one Smart Turn run (a batch)
};

class Engine;
namespace engine {
struct StreamSlot;
}

// A handle to one open stream. Move-only; destroying it closes the stream.
class Stream {
 public:
  Stream() = default;
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;
  ~Stream();

  explicit operator bool() const noexcept { return slot_ != nullptr; }
  std::uint64_t id() const noexcept;

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

  // End of input: the worker processes what is buffered (the last partial frame zero-padded),
  // emits the final speech_end if speech was open, then kEndOfStream. Idempotent. For a
  // resampled stream it may wait (up to 1 s) for room for the resampler's tail.
  void flush();

  // Moves up to out.size() pending events into `out`; returns how many. Never blocks.
  std::size_t poll(std::span<Event> out);
  // Waits until an event is pending or the timeout. True if one is.
  bool wait_events(std::chrono::microseconds timeout);

  // Message of the last kError event ("" if none). Valid until the next error of this stream.
  std::string last_error() const;

  // Stops the stream now: buffered audio that was not flushed is discarded, pending events too.
  // To keep the final events, flush() and poll() until kEndOfStream first. Idempotent.
  void close();

 private:
  friend class Engine;
  Stream(Engine* engine, std::shared_ptr<engine::StreamSlot> slot);
  Engine* engine_ = nullptr;
  std::shared_ptr<engine::StreamSlot> slot_;
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

  // Stops accepting streams, flushes every open stream and waits until all are processed.
  void drain();

  EngineStats stats() const;
  const EngineConfig& config() const noexcept;
  int num_workers() const noexcept;

 private:
  friend class Stream;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
