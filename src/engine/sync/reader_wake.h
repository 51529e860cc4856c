// How a reader waits for events of a stream or a speech session (Stream::wait_events,
// Speech::wait_events): it sleeps until the worker that writes the events wakes it, or until the
// timeout.
//
// The event rings are single-producer/single-consumer and lock-free, so the wake-up is beside
// them: the worker calls ReaderWake::published() after writing events, which costs one fence and
// one load while no reader waits, and takes the mutex to wake one only when one does. Readers used
// to poll the ring with a sleep that backed off from 50 us to 1 ms: each wait for a VAD window's
// probability (the Pipecat and LiveKit adapters ask for one every 32 ms per call) was then ~6
// sleeps and wake-ups instead of one, and those context switches were most of the adapters' CPU
// (docs/PYTHON.md).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace brisvox::engine {

class ReaderWake {
 public:
  // Worker, after its events are in the ring (the ring's release store). Never blocks for long.
  void published() noexcept {
    // Pairs with the fence in wait(): the reader stores `waiting_` and then checks the ring, this
    // side wrote the ring and then loads `waiting_` (a store-load order on both sides, which only
    // seq_cst fences give). So either the reader's check sees the events, or this load sees the
    // reader waiting and wakes it.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (!waiting_.load(std::memory_order_relaxed)) return;
    std::lock_guard lock(mutex_);
    wake_.notify_all();
  }

  // Reader (one at a time): true when ready() holds before `timeout` has passed.
  template <typename Ready>
  bool wait(Ready&& ready, std::chrono::microseconds timeout) {
    if (ready()) return true;
    if (timeout.count() <= 0) return false;
    std::unique_lock lock(mutex_);
    waiting_.store(true, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const bool got = wake_.wait_for(lock, timeout, ready);
    waiting_.store(false, std::memory_order_relaxed);
    return got;
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> waiting_{false};
};

// True when `ring` holds an event before `timeout` has passed.
template <typename Ring>
bool wait_for_events(const Ring& ring, ReaderWake& wake, std::chrono::microseconds timeout) {
  return wake.wait([&ring] { return ring.size() > 0; }, timeout);
}

}  // namespace brisvox::engine
