// Smart Turn v3: the cost of one end-of-turn analysis (features + model) at 1, 2 and 4 intra-op
// threads, on the generated model with the real architecture and random weights
// (tools/make_turn_models.py: Whisper-tiny encoder, 400 positions, 4 layers; fp32 and int8 QDQ).
// The model is generated into the build tree; $BRISVOX_TURN_MODEL points at another file.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "brisvox/models/turn/smart_turn.h"
#include "brisvox/models/turn/turn_features.h"

namespace {

std::string turn_model(const char* name) {
  if (const char* env = std::getenv("BRISVOX_TURN_MODEL")) return env;
  return std::string(BRISVOX_BENCH_GENERATED_DIR) + "/" + name;
}

std::vector<float> turn_audio() {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  std::vector<float> audio(16000 * 6);  // a 6 s turn: left-padded to 8 s, as real ones mostly are
  for (auto& x : audio) x = noise(rng);
  return audio;
}

void BM_TurnFeatures(benchmark::State& state) {
  brisvox::TurnFeatures features;
  const auto audio = turn_audio();
  std::vector<float> out(brisvox::kTurnFeatureValues);
  for (auto _ : state) {
    features.compute(audio, out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_TurnFeatures)->Unit(benchmark::kMillisecond);

void run_model(benchmark::State& state, const char* file) {
  const std::string path = turn_model(file);
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("no model at " + path + ": build the brisvox_test_models target").c_str());
    return;
  }
  brisvox::SmartTurnConfig config;
  config.model_path = path;
  config.max_batch = 1;
  config.session.intra_op_threads = static_cast<int>(state.range(0));
  brisvox::SmartTurn model(config);
  brisvox::TurnFeatures features;
  std::vector<float> f(brisvox::kTurnFeatureValues);
  features.compute(turn_audio(), f);
  const float* fp = f.data();
  float p = 0;
  model.run(std::span(&fp, 1), std::span(&p, 1));  // warm
  for (auto _ : state) {
    model.run(std::span(&fp, 1), std::span(&p, 1));
    benchmark::DoNotOptimize(p);
  }
}

void BM_SmartTurnFp32(benchmark::State& state) { run_model(state, "smart_turn_v3_arch.onnx"); }
void BM_SmartTurnInt8(benchmark::State& state) { run_model(state, "smart_turn_v3_arch_int8.onnx"); }
BENCHMARK(BM_SmartTurnFp32)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SmartTurnInt8)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
