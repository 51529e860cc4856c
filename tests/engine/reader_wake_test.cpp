// ReaderWake (engine/sync/reader_wake.h): a reader blocked in wait_events() is woken by the
// worker that writes its events, and never misses one. A missed wake-up does not lose the event
// (the wait's own timeout ends it), it delays it by the whole timeout: so these tests wait with
// long timeouts and count the waits that took anywhere near that long. Under TSan (scripts/test.sh
// tsan) they also check the fences and the mutex for races.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "brisvox/engine/engine.h"
#include "engine/engine_test_util.h"
#include "engine/sync/spsc_ring.h"
#include "engine/sync/reader_wake.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using Clock = std::chrono::steady_clock;
using engine::ReaderWake;
using engine::SpscRing;

TEST(ReaderWake, NoWakeUpIsMissedWhenEventsArriveWhileTheReaderGoesToSleep) {
  // One event at a time through a ring of 4: the reader empties the ring and waits again at once,
  // so a write and the reader's going to sleep race on almost every event.
  SpscRing<int> ring(4);
  ReaderWake wake;
  constexpr int kEvents = 20000;
  constexpr auto kTimeout = std::chrono::seconds(5);
  std::thread producer([&] {
    for (int i = 0; i < kEvents; ++i) {
      while (ring.write(std::span<const int>(&i, 1)) == 0) std::this_thread::yield();
      wake.published();
    }
  });
  int expected = 0;
  int slow_waits = 0;
  int out[4];
  while (expected < kEvents) {
    const auto t0 = Clock::now();
    ASSERT_TRUE(engine::wait_for_events(ring, wake, kTimeout)) << "event " << expected << " never came";
    if (Clock::now() - t0 > std::chrono::seconds(1)) ++slow_waits;  // a missed wake-up waits out kTimeout
    const std::size_t n = ring.read(std::span(out));
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], expected++);
  }
  producer.join();
  EXPECT_EQ(slow_waits, 0) << "waits that only ended at their timeout: wake-ups were missed";
}

TEST(ReaderWake, AWaitWithNothingPublishedEndsAtItsTimeout) {
  SpscRing<int> ring(4);
  ReaderWake wake;
  EXPECT_FALSE(engine::wait_for_events(ring, wake, std::chrono::milliseconds(20)));
  EXPECT_FALSE(engine::wait_for_events(ring, wake, std::chrono::microseconds(0)));
  const int one = 1;
  ring.write(std::span<const int>(&one, 1));
  EXPECT_TRUE(engine::wait_for_events(ring, wake, std::chrono::microseconds(0)))
      << "an event already there is seen without waiting, published() or not";
}

TEST(StreamWaitEvents, AReaderWaitingForAProbabilityIsWokenByTheWorker) {
  EngineConfig c;
  c.model("vad").path = test::bundled_model("silero_vad_v5.onnx");
  c.model("vad").num_workers = 1;
  Engine engine(c);
  StreamConfig sc;
  sc.vad.emit_probabilities = true;
  Stream s = engine.open_stream(sc);
  const auto& audio = test::sample_audio().samples;
  // Window by window, as the Pipecat adapter asks: push one, wait for its probability. Each wait
  // sleeps (the worker gathers a batch for ~2 ms first) and must be ended by the worker's wake-up.
  constexpr std::size_t kWindow = 512;
  constexpr int kWindows = 60;
  int slow_waits = 0;
  Event events[8];
  for (int w = 0; w < kWindows; ++w) {
    ASSERT_EQ(s.push(std::span(audio).subspan(static_cast<std::size_t>(w) * kWindow, kWindow)), kWindow);
    bool got = false;
    while (!got) {
      const auto t0 = Clock::now();
      ASSERT_TRUE(s.wait_events(std::chrono::seconds(5))) << "window " << w << ": no event";
      if (Clock::now() - t0 > std::chrono::seconds(1)) ++slow_waits;
      for (std::size_t i = 0, n = s.poll(events); i < n; ++i) {
        if (events[i].type == EventType::kVadProbability) {
          EXPECT_EQ(events[i].frame_index, w);
          got = true;
        }
      }
    }
  }
  EXPECT_EQ(slow_waits, 0) << "waits that only ended at their timeout";
}

}  // namespace
}  // namespace brisvox
