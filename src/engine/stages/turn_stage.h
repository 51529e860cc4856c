// The turn stage: end-of-turn detection (Smart Turn v3) after the VAD, on the batch pool as a
// request model.
//
// Per stream (TurnStage, a Stage of its pipeline), on its VAD worker: the Pipecat-semantics state machine
// (TurnDetector) fed with every frame's probability, and the stream's audio history. When the
// detector asks for an analysis, the VAD worker copies the turn's audio (at most 8 s, at the
// stream's model rate) into one of a fixed number of request slots and submits it to the turn
// pool. A turn worker gathers up to max_batch requests, upsamples 8 kHz audio to 16 kHz, computes
// the features, runs the model once and hands each verdict back through the stream's mailbox,
// then schedules the stream on its VAD worker, which alone turns it into events. A 100 ms analysis
// never delays VAD frames. No allocation per analysis.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "brisvox/audio/resampler.h"
#include "brisvox/engine/engine_config.h"
#include "brisvox/models/turn/smart_turn.h"
#include "brisvox/models/turn/turn_detector.h"
#include "brisvox/models/turn/turn_features.h"
#include "engine/pool/batch_pool.h"
#include "engine/pool/request_slots.h"
#include "engine/stream/audio_history.h"
#include "engine/stream/stage.h"

namespace brisvox::engine {

struct StreamState;
class TurnPool;

// The turn stage of one stream.
class TurnStage final : public Stage {
 public:
  TurnStage(int model_rate_hz, int frame_samples, const TurnOptions& options, TurnPool& turn_pool);

  // Audio the stream keeps for its analyses: 8 s analysed + pre-speech + slack for the time an
  // analysis waits: 9.5 s.
  std::size_t history_samples(int model_rate_hz, int /*chunk_samples*/, const VadOptions& /*vad*/) const override {
    return static_cast<std::size_t>(model_rate_hz) * 19 / 2;
  }
  // A verdict in the mailbox becomes events; a deferred analysis is submitted when it can be.
  void collect(StreamState& s) override;
  // The frame's probability (its audio is already in the stream's history): feeds the detector.
  void on_frame(StreamState& s, float probability, std::int64_t frame_ready_ns) override;
  // End of the stream: the detector's final actions (once).
  void on_end(StreamState& s) override;
  // Offline streams wait for their verdict before more audio is analysed.
  bool holds_frames() const override { return wait_for_verdict_ && busy(); }
  // A verdict is pending, in flight, or waits for a slot: the stream's end must wait for it.
  bool busy() const override {
    return detector_.verdict_pending() || in_flight_.load(std::memory_order_acquire) || deferred_;
  }
  // A request with the pool refers to the stream (its delivery schedules it again).
  bool pins_stream() const override { return in_flight_.load(std::memory_order_acquire); }

  // kTurnEnd events emitted so far (a call's barge-in on a turn's end watches it). VAD worker.
  std::uint64_t turns_ended() const noexcept { return turns_ended_; }

  // The turn pool's side (TurnAdapter::deliver): the verdict into the mailbox.
  void deliver(float probability, bool failed, bool timed_out, std::uint64_t request_id);

 private:
  void submit(StreamState& s, const TurnAction& action);
  // `since_ns`: when the input that led to these actions was ready (an analysis is timed from it).
  void act(StreamState& s, const TurnActions& actions, std::int64_t since_ns);

  TurnPool* const pool_;
  const bool wait_for_verdict_;
  TurnDetector detector_;                 // VAD worker only
  bool deferred_ = false;                 // an analysis waits for a free request slot (VAD worker)
  TurnAction deferred_action_;
  bool flush_started_ = false;            // detector_.flush() was called
  // Mailbox from the turn worker: probability and failure first, then the id (release).
  float verdict_probability_ = 0.0f;
  bool verdict_failed_ = false;
  bool verdict_timed_out_ = false;        // failed because the run passed EngineConfig::run_timeout_ms
  std::atomic<std::uint64_t> verdict_id_{0};
  std::atomic<bool> in_flight_{false};    // a request of this stream is with the turn pool
  // The latest analysis asked for and when its frame was ready (VAD worker): its verdict's turn
  // event is timed against it (TurnPool::record_turn_latency).
  std::uint64_t timed_request_id_ = 0;
  std::int64_t timed_since_ns_ = 0;
  std::uint64_t turns_ended_ = 0;
};

// One analysis, in a slot of the turn pool.
struct TurnRequest : PoolJob {
  std::shared_ptr<StreamState> stream;  // held until the verdict is delivered
  TurnStage* stage = nullptr;           // the stream's, kept alive by `stream`
  std::uint64_t request_id = 0;
  int sample_rate_hz = 16000;
  std::vector<float> audio;  // kTurnWindowSamples
  std::size_t num_samples = 0;
};

// A turn worker's model and scratch.
class TurnAdapter {
 public:
  using Job = TurnRequest;
  TurnAdapter(SmartTurn model, int max_batch, int run_timeout_ms, RequestSlots<TurnRequest>& slots);

  std::int64_t prepare(TurnRequest& r, std::size_t row);
  void run(int key, std::size_t rows);
  bool complete(TurnRequest& r, const Completion& c);
  void after_batch() {}
  void cancel_run() noexcept { model_.cancel_run(); }
  void clear_cancel() noexcept { model_.clear_cancel(); }
  std::string describe_failure(const Error& e, bool timed_out, std::size_t rows, std::int64_t elapsed_ns) const;
  std::size_t load() const noexcept { return in_flight_.load(std::memory_order_relaxed); }
  void add_load() noexcept { in_flight_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void stage_features(const TurnRequest& r, std::size_t row);
  // The verdict back to the stream's mailbox, the stream woken, the slot released.
  void deliver(TurnRequest& r, float probability, bool failed, bool timed_out);

  SmartTurn model_;
  TurnFeatures features_;
  Resampler upsampler_{8000, 16000, 8192};
  int run_timeout_ms_;
  RequestSlots<TurnRequest>* slots_;
  std::vector<float> audio16k_;        // kTurnWindowSamples + margin
  std::vector<float> feature_buffer_;  // [max_batch, 80, 800]
  std::vector<const float*> feature_ptrs_;
  std::vector<float> probs_;
  std::atomic<std::size_t> in_flight_{0};
};

class TurnPool final : public ModelPool {
 public:
  // `spec` resolved; Error (kIo, kBadModel, kModelMismatch) from loading the model.
  explicit TurnPool(const ModelSpec& spec);

  // VAD worker: queues an analysis of `audio` (model-rate samples, the last 8 s are used) for
  // `stage` of `stream`. False when every request slot is in use (the caller retries later).
  bool submit(StreamState& stream, TurnStage& stage, std::uint64_t request_id, const AudioHistory::Range& audio);

  void start() override { pool_.start(); }
  void stop() override {
    slots_->close();  // a late submit fails (the stream defers) instead of waiting in a stopped queue
    pool_.stop();
  }
  void watch_runs(RunWatchdog& watchdog) override { pool_.watch_runs(watchdog); }
  ModelStats stats() const override;
  // VAD workers: one analysis request -> the turn event its verdict decided (ModelStats::turn_latency).
  void record_turn_latency(double us) noexcept { turn_latency_.record(us); }
  double recent_p99_queue_delay_us(std::int64_t now) const override { return pool_.recent_p99_queue_delay_us(now); }
  int num_workers() const noexcept override { return pool_.num_workers(); }

 private:
  std::unique_ptr<RequestSlots<TurnRequest>> slots_;  // before the pool: its adapters use them
  BatchPool<TurnAdapter> pool_;
  LatencyHistogram turn_latency_;
};

}  // namespace brisvox::engine
