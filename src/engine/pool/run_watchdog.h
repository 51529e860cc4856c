// Deadlines for model runs: a thread that cancels, through ONNX Runtime's RunOptions terminate
// flag, any Run that has been in flight longer than its deadline: EngineConfig::run_timeout_ms, or
// the model's own ModelSpec::run_timeout_ms (a Piper sentence may take seconds).
//
// Why a thread of its own: a worker inside Session::Run cannot look at the clock, so someone else
// must. One watchdog per engine serves the workers of every model pool; it sleeps until the earliest
// in-flight Run could expire (or one whole timeout when none is in flight), so it wakes about once
// per timeout under load and never per frame.
//
// The runner's side (RunDeadline::begin / end) is two atomic operations per Run, no lock and no
// allocation: it stays off the warm path's budget (docs/ARCHITECTURE.md, invariants).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace brisvox::engine {

// The in-flight Run of one runner thread, as the watchdog sees it. Lock-free.
//
// State: 0 idle, > 0 the start time (ns) of the Run in flight, kClaimed while the watchdog is
// setting the terminate flag, kCancelled once it has. The claim is a compare-and-swap from the
// very start time the watchdog found too old, so a Run that ended meanwhile (and the next one,
// which has a new start time) is never cancelled by mistake.
class RunDeadline {
 public:
  // Runner: a Run starts at `start_ns` (> 0, steady clock).
  void begin(std::int64_t start_ns) noexcept { state_.store(start_ns, std::memory_order_release); }

  // Runner: the Run returned. True when the watchdog cancelled it: its terminate flag is set and
  // the runner must clear it before the next Run. If the watchdog is between its claim and the
  // flag (a few instructions), this waits for it, so the flag is never set after it was cleared.
  bool end(std::int64_t start_ns) noexcept;

  // Watchdog: the start time of the Run in flight, or 0 (none, or one already cancelled).
  std::int64_t in_flight_since() const noexcept {
    const std::int64_t s = state_.load(std::memory_order_acquire);
    return s > 0 ? s : 0;
  }
  // Watchdog: claims the Run that started at `start_ns` for cancellation; false if it has ended.
  bool claim(std::int64_t start_ns) noexcept {
    return state_.compare_exchange_strong(start_ns, kClaimed, std::memory_order_acq_rel);
  }
  // Watchdog: the terminate flag of the claimed Run is set.
  void cancelled() noexcept { state_.store(kCancelled, std::memory_order_release); }

 private:
  static constexpr std::int64_t kClaimed = -1;
  static constexpr std::int64_t kCancelled = -2;
  // Its own cache line: the runner writes it every Run, the watchdog reads it rarely.
  alignas(64) std::atomic<std::int64_t> state_{0};
};

class RunWatchdog {
 public:
  // `timeout_ms` > 0.
  explicit RunWatchdog(int timeout_ms);
  ~RunWatchdog();  // stops and joins
  RunWatchdog(const RunWatchdog&) = delete;
  RunWatchdog& operator=(const RunWatchdog&) = delete;

  // Before start(): watch one runner. `cancel` runs on the watchdog thread when the runner's Run
  // is late; it must set the runner's terminate flag and nothing more (it must not block). Both
  // must stay valid until stop() returns. `timeout_ns` > 0: this runner's deadline instead of
  // the watchdog's.
  void watch(RunDeadline& deadline, std::function<void()> cancel, std::int64_t timeout_ns = 0);

  void start();
  // Idempotent. Call before the watched runners are destroyed.
  void stop();

  std::int64_t timeout_ns() const noexcept { return timeout_ns_; }

 private:
  struct Watched {
    RunDeadline* deadline;
    std::function<void()> cancel;
    std::int64_t timeout_ns;
  };
  void run();

  const std::int64_t timeout_ns_;
  std::int64_t shortest_ns_;  // the shortest deadline watched
  std::vector<Watched> watched_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // (mu_)
  std::thread thread_;
};

}  // namespace brisvox::engine
