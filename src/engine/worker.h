// One inference worker: a thread, its own Silero session, the streams assigned to it and their
// ready queue. The worker gathers frames from ready streams into one batch (bounded in size and in
// waiting time), runs the model once, and turns the results into events.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/models/vad/silero_vad.h"
#include "engine/histogram.h"
#include "engine/run_watchdog.h"
#include "engine/stream_slot.h"

namespace brisvox::engine {

class TurnPool;

// Per-worker counters, read by Engine::stats() from any thread.
struct WorkerCounters {
  std::atomic<std::uint64_t> frames{0};
  std::atomic<std::uint64_t> batches{0};
  std::atomic<std::uint64_t> overload_events{0};
  std::atomic<std::uint64_t> run_errors{0};
  std::atomic<std::uint64_t> run_timeouts{0};  // runs the watchdog cancelled (also in run_errors)
  // Of the streams this worker closed (input_tally.h), in input-rate samples.
  std::atomic<std::uint64_t> samples_analysed{0};
  std::atomic<std::uint64_t> samples_failed{0};
  std::atomic<std::uint64_t> samples_discarded{0};
  // The per-stream counters of closed streams, so that the engine's totals never go down.
  std::atomic<std::uint64_t> closed_samples_rejected{0};
  std::atomic<std::uint64_t> closed_events_dropped{0};
  std::vector<std::atomic<std::uint64_t>> batch_sizes;  // [b], b = 1..max_batch
  Histogram queue_delay;
  Histogram inference;
  Histogram added_latency;
  // p99 queue delay over the last full second, for admission control.
  std::atomic<double> recent_p99_queue_delay_us{0.0};
  std::atomic<std::int64_t> window_end_ns{0};  // when it was measured (stale values are ignored)
  explicit WorkerCounters(int max_batch) : batch_sizes(static_cast<std::size_t>(max_batch) + 1) {}
};

class Worker {
 public:
  // `turns` (may be null) runs the streams' end-of-turn analyses; it must outlive the worker.
  Worker(int index, const EngineConfig& config, SileroVad vad, TurnPool* turns);
  ~Worker();  // stops and joins
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void start();
  // Lets the thread finish the streams that are flushed, then stop.
  void stop();

  // Engine (any thread): adds a stream to this worker.
  void attach(std::shared_ptr<StreamSlot> slot);
  // Producer: the stream has work (a complete frame, a flush or a close). Cheap when already queued.
  void schedule(StreamSlot* slot);

  int num_streams() const noexcept { return num_streams_.load(std::memory_order_relaxed); }
  const WorkerCounters& counters() const noexcept { return counters_; }
  // For the engine's RunWatchdog: this worker's in-flight Run, and how to cancel it (any thread).
  RunDeadline& run_deadline() noexcept { return deadline_; }
  void cancel_run() noexcept { vad_.cancel_run(); }
  // Streams of this worker that have not yet emitted kEndOfStream (for drain).
  std::vector<std::shared_ptr<StreamSlot>> streams_snapshot();

 private:
  // A fixed-capacity FIFO of stream pointers: no allocation after construction.
  class ReadyQueue {
   public:
    explicit ReadyQueue(std::size_t capacity) : items_(capacity) {}
    bool empty() const noexcept { return size_ == 0; }
    std::size_t size() const noexcept { return size_; }
    bool push(StreamSlot* s) noexcept;
    StreamSlot* front() const noexcept { return items_[head_]; }
    StreamSlot* pop() noexcept;

   private:
    std::vector<StreamSlot*> items_;
    std::size_t head_ = 0;
    std::size_t size_ = 0;
  };

  void run();
  // Pops up to max_batch streams of one rate into batch_ (worker mutex held).
  int gather(std::unique_lock<std::mutex>& lock);
  void process(int rate_index, std::size_t count);
  // A failed Run: error events for the batch's n streams, whose frames count as silence.
  void fail_batch(std::size_t n, const Error& error, bool timed_out, std::int64_t elapsed_ns);
  void finish_stream(StreamSlot& s);
  void remove_stream(StreamSlot* s);
  void reap_retired();
  // End-of-turn detection (streams with a TurnSlot).
  void turn_frame(StreamSlot& s, const float* frame, std::size_t num_samples, float prob);
  void turn_mailbox(StreamSlot& s);
  void turn_actions(StreamSlot& s, const TurnActions& actions);
  void turn_submit(StreamSlot& s, const TurnAction& action);
  void overload_check(StreamSlot& s, std::int64_t queue_delay_ns);
  void update_window(std::int64_t now);

  const int index_;
  const EngineConfig config_;
  SileroVad vad_;
  WorkerCounters counters_;
  RunDeadline deadline_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::array<ReadyQueue, 2> ready_;  // by rate index
  bool idle_ = false;                // waiting for any work (mu_)
  bool gathering_ = false;           // waiting to fill a batch (mu_)
  bool stop_ = false;                // (mu_)
  std::vector<std::shared_ptr<StreamSlot>> streams_;  // registry (mu_)
  // Closed streams whose memory may still be referenced (a queued pointer, a turn request): freed
  // by reap_retired() once neither holds. Worker thread only.
  std::vector<std::shared_ptr<StreamSlot>> retired_;
  TurnPool* turns_;
  std::atomic<int> num_streams_{0};

  // Batch staging, preallocated for max_batch.
  std::vector<StreamSlot*> batch_;
  std::vector<SileroStreamState*> batch_states_;
  std::vector<const float*> batch_chunks_;
  std::vector<float> staging_;  // [max_batch, 512]
  std::vector<float> probs_;
  std::vector<std::int64_t> complete_ns_;
  std::vector<std::size_t> consumed_;  // samples each stream's frame takes from its ring
  std::vector<std::uint8_t> final_;    // the frame is the stream's last (flush)
  std::vector<StreamSlot*> requeue_;
  Histogram window_;  // queue delay of the current one-second window
  std::int64_t window_start_ns_ = 0;
  std::thread thread_;
};

}  // namespace brisvox::engine
