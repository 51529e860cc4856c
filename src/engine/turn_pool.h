// The turn workers: threads that run Smart Turn for the streams' turn analyses, apart from the VAD
// workers so that a 20 ms turn analysis never delays the 32 ms VAD frames of other streams.
//
// A VAD worker copies a turn's audio (at most 8 s, at the stream's model rate) into one of a fixed
// number of request slots and queues it; a turn worker gathers up to turn_max_batch requests,
// resamples 8 kHz audio to 16 kHz, computes the features, runs the model once, and hands each
// verdict back through the stream's mailbox, then schedules the stream on its VAD worker (which
// alone emits events). No allocation per analysis.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "brisvox/audio/resampler.h"
#include "brisvox/engine/engine.h"
#include "brisvox/models/turn/smart_turn.h"
#include "brisvox/models/turn/turn_features.h"
#include "engine/histogram.h"
#include "engine/run_watchdog.h"

namespace brisvox::engine {

struct StreamSlot;

struct TurnCounters {
  std::atomic<std::uint64_t> analyses{0};
  std::atomic<std::uint64_t> errors{0};
  std::atomic<std::uint64_t> timeouts{0};  // runs the watchdog cancelled (also in errors)
  Histogram latency;
  Histogram features;
  Histogram inference;
};

class TurnPool {
 public:
  TurnPool(const EngineConfig& config);
  ~TurnPool();  // stops and joins
  TurnPool(const TurnPool&) = delete;
  TurnPool& operator=(const TurnPool&) = delete;

  void start();
  void stop();

  // VAD worker: queues an analysis of `audio` (model-rate samples, the last 8 s are used).
  // False when every request slot is in use (the caller retries later).
  bool submit(std::shared_ptr<StreamSlot> stream, std::uint64_t request_id, int sample_rate_hz,
              const float* audio_a, std::size_t n_a, const float* audio_b, std::size_t n_b);

  const TurnCounters& counters() const noexcept { return counters_; }
  // Before start(): puts every turn worker's Smart Turn run under the watchdog's deadline.
  void watch_runs(RunWatchdog& watchdog);

 private:
  struct Request {
    std::shared_ptr<StreamSlot> stream;
    std::uint64_t request_id = 0;
    int sample_rate_hz = 16000;
    std::vector<float> audio;  // kTurnWindowSamples
    std::size_t num_samples = 0;
    std::int64_t submitted_ns = 0;
  };
  struct Worker {
    SmartTurn model;
    TurnFeatures features;
    Resampler upsampler{8000, 16000, 8192};
    std::vector<float> audio16k;        // kTurnWindowSamples + margin
    std::vector<float> feature_buffer;  // [turn_max_batch, 80, 800]
    std::vector<const float*> feature_ptrs;
    std::vector<float> probs;
    std::vector<std::size_t> batch;     // request indices
    std::thread thread;
    RunDeadline deadline;
  };

  void run(Worker& w);
  void deliver(Request& r, float probability, bool failed, bool timed_out);

  const EngineConfig config_;
  std::vector<Request> requests_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::size_t> free_;    // request slots not in use (mu_)
  std::vector<std::size_t> queue_;   // ring of submitted requests (mu_), one place per slot
  std::size_t queue_head_ = 0;
  std::size_t queue_size_ = 0;
  bool stop_ = false;
  TurnCounters counters_;
};

}  // namespace brisvox::engine
