// The VAD pool: Silero on the batch pool as a frame-synchronous model, and the clock of every
// stream's pipeline.
//
// A stream is a job of its VAD pool, pinned to one worker for its life and queued whenever a frame
// completes (or it is flushed, closed, or a stage has results for it). For each ready stream of a
// batch the adapter stages one frame (the model is recurrent: one frame per stream per batch), runs
// the model once over all of them, and then, per stream: the probability to the segmenter (speech
// events, segment audio) and to the stream's stages (stage.h: it names none of them), overload
// checks, the end of the stream. It also retires closed streams: their memory is freed once
// nothing refers to it any more.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "brisvox/engine/engine_config.h"
#include "brisvox/models/vad/silero_vad.h"
#include "engine/pool/batch_pool.h"
#include "engine/pool/retired_jobs.h"
#include "engine/stream/stream_registry.h"
#include "engine/stream/stream_state.h"
#include "engine/stream/stream_totals.h"

namespace brisvox::engine {

// What the stages share with the engine: the open streams, the totals of closed ones, and the
// engine-wide settings they need.
struct EngineShared {
  EngineShared(std::size_t max_streams, int latency_budget) : streams(max_streams), latency_budget_ms(latency_budget) {}
  StreamRegistry streams;
  StreamTotals totals;
  const int latency_budget_ms;
};

class VadAdapter {
 public:
  using Job = StreamState;
  VadAdapter(SileroVad vad, int max_batch, int run_timeout_ms, EngineShared& shared);

  std::int64_t prepare(StreamState& s, std::size_t row);
  void run(int key, std::size_t rows);
  bool complete(StreamState& s, const Completion& c);
  void after_batch();  // frees retired streams nothing refers to any more
  void cancel_run() noexcept { vad_.cancel_run(); }
  void clear_cancel() noexcept { vad_.clear_cancel(); }
  std::string describe_failure(const Error& e, bool timed_out, std::size_t rows, std::int64_t elapsed_ns) const;
  std::size_t load() const noexcept { return num_streams_.load(std::memory_order_relaxed); }

  // open_stream (any thread): one more stream pinned to this worker.
  void attach() noexcept { num_streams_.fetch_add(1, std::memory_order_relaxed); }

 private:
  // prepare() without the announcement: the frame staged in `row`, or kNotStaged.
  std::int64_t stage_frame(StreamState& s, std::size_t row);
  void fail_frame(StreamState& s, std::size_t row, const RunFailure& failure);
  void segment_event(StreamState& s, const SegmentEvent& e);
  void finish_stream(StreamState& s);
  void retire(StreamState& s);
  void overload_check(StreamState& s, std::int64_t queue_delay_ns);

  SileroVad vad_;
  const int run_timeout_ms_;  // for messages
  EngineShared& shared_;
  std::atomic<std::size_t> num_streams_{0};
  // Closed streams whose memory may still be referenced (a queued pointer, a stage's request): freed
  // by after_batch() once neither holds. Worker thread only.
  RetiredJobs<StreamState> retired_{64};

  // Batch staging, preallocated for max_batch.
  std::vector<SileroStreamState*> batch_states_;
  std::vector<const float*> batch_chunks_;
  std::vector<float> staging_;  // [max_batch, 512]
  std::vector<float> probs_;
  std::vector<std::size_t> consumed_;  // samples each stream's frame takes from its ring
  std::vector<std::uint8_t> final_;    // the frame is the stream's last (flush)
};

// The pool of one kSileroVad model of the registry.
class VadPool final : public BatchPool<VadAdapter> {
 public:
  // `spec` resolved; Error (kIo, kBadModel, kModelMismatch) from loading the model.
  VadPool(const ModelSpec& spec, std::size_t max_streams, EngineShared& shared);
};

}  // namespace brisvox::engine
