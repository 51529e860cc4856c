// LogMelExtractor::compute() allocates nothing: this binary replaces malloc and friends (and so
// every operator new, and kissfft's malloc) with counting versions.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/log_mel.h"
#include "counting_malloc.h"
#include "test_paths.h"

using brisvox::test::allocations_in;

namespace brisvox {
namespace {

TEST(LogMelAllocations, TheCounterSeesAllocations) {
  void* volatile p = nullptr;
  const auto n = allocations_in([&] {
    p = std::malloc(100);
    std::free(p);
    p = ::operator new(64);
    ::operator delete(p);
  });
  EXPECT_GE(n, 2u) << "the replaced malloc is not in effect";
}

TEST(LogMelAllocations, ComputeAllocatesNothing) {
  // Smart Turn's input (8 s: interior frames and both reflected edges), a whole file, and short
  // inputs (repeated reflection, no frame at all).
  const std::vector<float> speech = load_audio(test::sample_wav()).samples;
  const std::vector<std::size_t> lengths = {128000, speech.size(), 170, 100, 0};
  std::vector<float> out(LogMelExtractor::num_values(speech.size()));
  LogMelExtractor mel;
  const auto run_all = [&] {
    for (std::size_t n : lengths) {
      mel.compute(std::span<const float>(speech.data(), n),
                  std::span<float>(out.data(), LogMelExtractor::num_values(n)));
    }
  };
  run_all();  // warm-up: nothing is supposed to be lazy, but measure the steady state
  EXPECT_EQ(allocations_in([&] {
              for (int i = 0; i < 3; ++i) run_all();
            }),
            0u);

  // One 8 s compute, for the record (not a benchmark: one warm run, wall clock).
  const std::span<const float> smart_turn(speech.data(), 128000);
  const auto start = std::chrono::steady_clock::now();
  mel.compute(smart_turn, std::span<float>(out.data(), 64000));
  const auto us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  std::printf("one 128000-sample compute: %.0f us\n", us);
  RecordProperty("log_mel_128000_us", std::to_string(us));
}

}  // namespace
}  // namespace brisvox
