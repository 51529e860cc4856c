// SileroVad::run over a batch of independent streams: what batching buys per stream. The engine's
// max_batch default rests on this curve (docs/PERFORMANCE.md).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "brisvox/error.h"
#include "brisvox/models/vad/silero_vad.h"

namespace {

using brisvox::SileroStreamState;
using brisvox::SileroVad;

constexpr int kRateHz = 16000;
constexpr int kMaxBatch = 64;

// A bundled v5 graph from the build's models folder ($BRISVOX_MODELS_DIR wins when set):
// "silero_vad_v5.onnx" as exported, "silero_vad_v5.flat.onnx" as tools/flatten_silero.py
// rewrites it for batching.
std::string model_path(const std::string& file) {
  if (const char* dir = std::getenv("BRISVOX_MODELS_DIR"); dir != nullptr && *dir != '\0') {
    return std::string(dir) + "/" + file;
  }
  return std::string(BRISVOX_BENCH_MODELS_DIR) + "/" + file;
}

// One session per graph for every batch size, as a worker has (the first run of each size is in
// the warm-up below, not in the timings).
SileroVad& shared_vad(const std::string& file) {
  static std::map<std::string, std::unique_ptr<SileroVad>> sessions;
  auto& vad = sessions[file];
  if (!vad) {
    brisvox::SileroConfig config;
    config.model_path = model_path(file);
    config.max_batch = kMaxBatch;
    config.session.intra_op_threads = 1;
    vad = std::make_unique<SileroVad>(config);
  }
  return *vad;
}

void BM_SileroRun(benchmark::State& state, const char* file) {
  const auto batch = static_cast<std::size_t>(state.range(0));
  SileroVad* vad = nullptr;
  try {
    vad = &shared_vad(file);
  } catch (const brisvox::Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  // Speech-like noise (the model's cost does not depend on the content); a chunk per stream.
  const auto chunk = static_cast<std::size_t>(brisvox::silero_chunk_samples(kRateHz));
  std::mt19937 rng(42);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  std::vector<float> audio(batch * chunk);
  for (float& x : audio) x = noise(rng);
  std::vector<SileroStreamState> states(batch);
  std::vector<SileroStreamState*> state_ptrs(batch);
  std::vector<const float*> chunks(batch);
  std::vector<float> probs(batch);
  for (std::size_t i = 0; i < batch; ++i) {
    state_ptrs[i] = &states[i];
    chunks[i] = audio.data() + i * chunk;
  }
  for (int i = 0; i < 3; ++i) vad->run(kRateHz, state_ptrs, chunks, probs);
  // Timed here too: Google Benchmark 1.7 prints an inverted rate counter with an "s" suffix,
  // which would read as seconds.
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    vad->run(kRateHz, state_ptrs, chunks, probs);
    benchmark::DoNotOptimize(probs.data());
  }
  const double elapsed_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * batch));
  state.counters["us_per_stream"] =
      elapsed_us / static_cast<double>(state.iterations()) / static_cast<double>(batch);
}
BENCHMARK_CAPTURE(BM_SileroRun, exported, "silero_vad_v5.onnx")
    ->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SileroRun, flat, "silero_vad_v5.flat.onnx")
    ->Arg(1)->Arg(2)->Arg(4)->Arg(8)->Arg(16)->Arg(32)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace
