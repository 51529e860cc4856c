// Everything one stream owns, allocated once at open_stream(): the sample ring the caller writes
// and its VAD worker reads, the VAD's state, the stages of its pipeline (stage.h), the audio
// history the stages look back on, and its output (events and payloads for its reader,
// output/session_output.h). About 12 KiB with the default 128 ms buffer at 16 kHz and VAD only
// (tests/engine/stream_memory_test.cpp counts it).
//
// A stream is a job of its VAD pool (PoolJob, key = its model rate) and is pinned to one VAD
// worker for its life: that worker alone touches the "worker side" fields below, its stages
// included.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "brisvox/audio/resampler.h"
#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/events.h"
#include "brisvox/models/vad/silero_vad.h"
#include "brisvox/models/vad/streaming_segmenter.h"
#include "engine/output/session_output.h"
#include "engine/pool/pool_clock.h"
#include "engine/pool/pool_job.h"
#include "engine/stream/audio_history.h"
#include "engine/stream/stage.h"
#include "engine/sync/spsc_ring.h"

namespace brisvox::engine {

class VadPool;  // stream/vad_pool.h

// PoolJob::key of a stream: which model rate it runs at (a VAD batch holds one rate).
inline int vad_rate_key(int model_rate_hz) noexcept { return model_rate_hz == 16000 ? 0 : 1; }
inline constexpr int kNumVadRateKeys = 2;

// Input samples a stream's resampler takes per call (push() resamples in blocks of this size).
inline constexpr std::size_t kResamplerBlock = 1024;

// The model-rate samples a segment's audio may need in the history: the longest segment kept, plus
// what the segmenter looks ahead before it ends one (min silence), the padding on both sides and a
// frame.
std::size_t segment_history_samples(const VadOptions& vad, double max_segment_s, int model_rate_hz, int chunk_samples);

struct StreamState : PoolJob, std::enable_shared_from_this<StreamState> {
  // `vad_pool`, `worker`: where the stream runs. `pipeline`: its stages, in order. `shared_wake`:
  // the reader's wake-up when it shares one with another session (a call), else null.
  StreamState(std::uint64_t stream_id, const StreamConfig& stream_config, VadPool& vad_pool, int vad_worker,
              std::vector<std::unique_ptr<Stage>> pipeline, std::shared_ptr<ReaderWake> shared_wake = nullptr);
  ~StreamState();

  const std::uint64_t id;
  const StreamConfig config;
  const int model_rate_hz;
  const int chunk_samples;  // model frame
  VadPool* const vad_pool;

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

  // --- lifecycle ----------------------------------------------------------------------------
  std::atomic<bool> close_requested{false};  // the handle let go: the worker retires the stream
  std::size_t registry_index = 0;            // in the engine's StreamRegistry (its mutex)

  // --- worker side (touched by the owning VAD worker only) --------------------------------
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
  std::atomic<bool> retired{false};    // removed from the registry; memory kept until unreferenced
  const std::int64_t max_segment_samples;  // VadOptions::max_segment_audio_s at the model rate
  // The stages after the VAD, in pipeline order (stage.h); empty for a VAD-only stream.
  const std::vector<std::unique_ptr<Stage>> stages;
  // The last seconds of model-rate audio, for the stages that look back and the segment audio.
  std::optional<AudioHistory> history;

  // --- events and payloads (worker -> reader) -----------------------------------------------
  SessionOutput output;

  double seconds(std::int64_t model_samples) const noexcept {
    return static_cast<double>(model_samples) / model_rate_hz;
  }
  // Where the input ends, in model samples, for a flushed stream that wrote `written`: the
  // resampler's tail rounds up, so its last model sample can lie past the input's last one, and a
  // segment must not end after the file does. Read by the worker after flush_requested (acquire).
  std::int64_t input_end(std::int64_t written) const noexcept {
    if (config.sample_rate_hz == model_rate_hz) return written;
    const auto end = static_cast<std::int64_t>(static_cast<long double>(input_accepted) * model_rate_hz /
                                               config.sample_rate_hz);
    return std::min(written, end);
  }
  // Whether any stage holds the stream's frames, defers its end, is busy, or pins it.
  bool stages_hold_frames() const noexcept;
  bool stages_defer_end() const noexcept;
  bool stages_busy() const noexcept;
  bool stages_pin() const noexcept;
};

}  // namespace brisvox::engine
