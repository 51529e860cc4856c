#include "engine/pool/run_watchdog.h"

#include <algorithm>
#include <chrono>

#include "engine/pool/pool_clock.h"
#include "base/log.h"

namespace brisvox::engine {

bool RunDeadline::end(std::int64_t start_ns) noexcept {
  std::int64_t expected = start_ns;
  if (state_.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return false;
  // Claimed by the watchdog: wait until its terminate call has returned.
  while (state_.load(std::memory_order_acquire) != kCancelled) std::this_thread::yield();
  state_.store(0, std::memory_order_release);
  return true;
}

RunWatchdog::RunWatchdog(int timeout_ms)
    : timeout_ns_(std::int64_t{timeout_ms} * 1'000'000), shortest_ns_(timeout_ns_) {}

RunWatchdog::~RunWatchdog() { stop(); }

void RunWatchdog::watch(RunDeadline& deadline, std::function<void()> cancel, std::int64_t timeout_ns) {
  const std::int64_t t = timeout_ns > 0 ? timeout_ns : timeout_ns_;
  shortest_ns_ = std::min(shortest_ns_, t);
  watched_.push_back(Watched{&deadline, std::move(cancel), t});
}

void RunWatchdog::start() { thread_ = std::thread([this] { run(); }); }

void RunWatchdog::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RunWatchdog::run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    const std::int64_t now = now_ns();
    // A Run that starts after this scan expires no earlier than now + the shortest deadline.
    std::int64_t next_check = now + shortest_ns_;
    for (Watched& w : watched_) {
      const std::int64_t since = w.deadline->in_flight_since();
      if (since == 0) continue;
      if (now - since < w.timeout_ns) {
        next_check = std::min(next_check, since + w.timeout_ns);
        continue;
      }
      if (!w.deadline->claim(since)) continue;  // it ended meanwhile
      w.cancel();
      w.deadline->cancelled();
    }
    cv_.wait_for(lock, std::chrono::nanoseconds(std::max<std::int64_t>(next_check - now_ns(), 1'000'000)));
  }
}

}  // namespace brisvox::engine
