// Everything one stream owns, allocated once at open_stream(): the sample ring the caller writes
// and its worker reads, the model's recurrent state, the segmenter, and the event ring the worker
// writes and the caller reads. About 13 KiB with the default 128 ms buffer at 16 kHz.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "brisvox/audio/resampler.h"
#include "brisvox/engine/engine.h"
#include "brisvox/models/vad/silero_vad.h"
#include "brisvox/models/turn/turn_detector.h"
#include "brisvox/models/vad/streaming_segmenter.h"
#include "engine/spsc_ring.h"

namespace brisvox::engine {

class Worker;

// End-of-turn state of a stream that asked for it (StreamConfig::detect_turns).
struct TurnSlot {
  TurnSlot(int model_rate_hz, int frame_samples, const TurnParams& params);
  TurnDetector detector;                 // VAD worker only
  std::vector<float> history;            // ring of the last ~9 s of model-rate audio (VAD worker)
  std::int64_t history_written = 0;      // samples appended (VAD worker)
  bool deferred = false;                 // an analysis waits for a free request slot
  TurnAction deferred_action;
  bool flush_started = false;            // detector.flush() was called
  // Mailbox from the turn worker: probability and failure first, then the id (release).
  float verdict_probability = 0.0f;
  bool verdict_failed = false;
  bool verdict_timed_out = false;        // failed because the run passed EngineConfig::run_timeout_ms
  std::atomic<std::uint64_t> verdict_id{0};
  std::atomic<bool> in_flight{false};    // a request of this stream is with the turn pool
};

using Clock = std::chrono::steady_clock;

inline std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

struct StreamSlot : std::enable_shared_from_this<StreamSlot> {
  StreamSlot(std::uint64_t stream_id, const StreamConfig& stream_config, int model_rate, Worker* owner);

  const std::uint64_t id;
  const StreamConfig config;
  const int model_rate_hz;
  const int rate_index;     // 0: 16 kHz, 1: 8 kHz (a worker batches one rate at a time)
  const int chunk_samples;  // model frame
  Worker* const worker;

  // --- caller (producer) side -------------------------------------------------------------
  std::optional<Resampler> resampler;  // only when the input rate is not the model rate
  std::vector<float> resampled;        // scratch for the resampler's output
  SpscRing<float> samples;             // model-rate audio
  // Completion time of model frame k at [k & frame_time_mask]: the ring holds at most
  // capacity / chunk frames, so a slot is never overwritten before its frame is consumed.
  std::vector<std::int64_t> frame_complete_ns;
  std::size_t frame_time_mask;
  std::atomic<std::uint64_t> samples_rejected{0};
  // A push that could not take everything starts a refusal episode; the worker reports each
  // episode once (with the running total), not every refused push.
  bool refusing = false;  // producer only
  std::atomic<std::uint32_t> refusal_episodes{0};
  // Resampler output that did not fit in the ring yet: written first by the next push, so the
  // resampler never drops what it has consumed. [pending_begin, pending_end) of `resampled`.
  std::size_t pending_begin = 0;
  std::size_t pending_end = 0;
  std::atomic<bool> flush_requested{false};
  std::int64_t flush_ns = 0;  // written before flush_requested (release)
  // For the closing tally (input_tally.h), read by the worker once close_requested is seen
  // (acquire): input samples push() accepted, and whether flush() gave up on the resampler's tail.
  std::uint64_t input_accepted = 0;
  bool flush_tail_refused = false;

  // --- scheduling ---------------------------------------------------------------------------
  std::atomic<bool> queued{false};          // in its worker's ready queue
  std::int64_t ready_since_ns = 0;          // when it was queued (worker mutex)
  std::atomic<bool> close_requested{false}; // the handle let go: the worker removes the slot

  // --- worker side (touched by the owning worker only) ------------------------------------
  SileroStreamState vad_state;
  StreamingSegmenter segmenter;
  std::int64_t frames_done = 0;
  std::uint64_t model_analysed = 0;    // model samples given to runs that succeeded (padding excluded)
  std::uint64_t model_failed = 0;      // ... and to runs that failed
  bool overloaded = false;             // inside an overload episode (one event per episode)
  std::uint32_t episodes_reported = 0; // refusal_episodes already reported in overload events
  bool finished = false;               // kEndOfStream emitted
  bool segments_flushed = false;       // the segmenter's final events were emitted
  std::atomic<bool> finished_flag{false};
  std::unique_ptr<TurnSlot> turn;      // only with detect_turns
  std::atomic<bool> retired{false};    // removed from its worker; memory kept until unreferenced

  // --- events (worker -> reader) ------------------------------------------------------------
  SpscRing<Event> events;
  std::atomic<std::uint64_t> events_dropped{0};
  mutable std::mutex error_mutex;
  std::string last_error;

  // Returns true if the event was queued. Probability events are dropped (and counted) when the
  // ring is nearly full, so that speech events always find room.
  bool emit(const Event& event);
  double seconds(std::int64_t model_samples) const noexcept {
    return static_cast<double>(model_samples) / model_rate_hz;
  }
};

}  // namespace brisvox::engine
