// StreamingSegmenter::push: the per-frame work a worker does after the model, which must stay
// negligible next to the model's tens of microseconds.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "brisvox/models/vad/streaming_segmenter.h"

namespace {

// Probabilities shaped like speech: runs of speech (around 0.9) and silence (around 0.05) of
// random lengths, with noise that crosses the thresholds now and then.
std::vector<float> speech_like_probabilities(std::size_t n) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> speech_frames(5, 120);
  std::uniform_int_distribution<int> silence_frames(2, 60);
  std::normal_distribution<float> noise(0.0f, 0.12f);
  std::vector<float> probs;
  probs.reserve(n);
  bool speech = false;
  while (probs.size() < n) {
    const int len = speech ? speech_frames(rng) : silence_frames(rng);
    for (int i = 0; i < len && probs.size() < n; ++i) {
      const float p = (speech ? 0.9f : 0.05f) + noise(rng);
      probs.push_back(p < 0.0f ? 0.0f : (p > 1.0f ? 1.0f : p));
    }
    speech = !speech;
  }
  return probs;
}

void BM_StreamingSegmenterPush(benchmark::State& state) {
  const std::vector<float> probs = speech_like_probabilities(1 << 16);
  brisvox::StreamingSegmenter segmenter(16000, brisvox::SegmenterParams{});
  std::size_t i = 0;
  std::size_t events = 0;
  for (auto _ : state) {
    const brisvox::SegmentEvents out = segmenter.push(probs[i]);
    events += out.size();
    benchmark::DoNotOptimize(out);
    i = (i + 1) & (probs.size() - 1);
  }
  benchmark::DoNotOptimize(events);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_StreamingSegmenterPush);

}  // namespace
