// How a reader waits for events of a stream or a speech session (Stream::wait_events,
// Speech::wait_events): polls its event ring with a backoff from 50 us to 1 ms, so that a reader
// is at most 1 ms late and an idle one costs ~1000 wake-ups per second at most. The rings are
// single-producer/single-consumer and lock-free, so there is no condition variable to wait on.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace brisvox::engine {

// True when `ring` holds an event before `timeout` has passed.
template <typename Ring>
bool wait_for_events(const Ring& ring, std::chrono::microseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto sleep = std::chrono::microseconds(50);
  while (ring.size() == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(1000));
  }
  return true;
}

}  // namespace brisvox::engine
