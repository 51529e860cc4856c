// Smart Turn v3: the cost of one end-of-turn analysis (features + model) at 1, 2 and 4 intra-op
// threads, on the generated model with the real architecture and random weights
// (tools/make_turn_models.py: Whisper-tiny encoder, 400 positions, 4 layers; fp32 and int8 QDQ).
// The model is generated into the build tree; $BRISVOX_TURN_MODEL points at another file.
// BM_SmartTurnV32*: the real Smart Turn v3.2 (int8 QDQ, the file Pipecat ships; scripts/setup.sh),
// per thread count, per graph optimisation level, and a whole analysis (features + model) at one
// thread, the engine's setting. BM_SmartTurnV32Profile (only with $BRISVOX_ORT_PROFILE=PREFIX):
// the same runs on a bare ONNX Runtime session with the engine's options and profiling on; the
// per-operator trace goes to PREFIX_<date>.json (tools/ort_profile_summary.py sums it).
#include <benchmark/benchmark.h>
#include <onnxruntime_cxx_api.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "brisvox/models/model_paths.h"
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

void run_model(benchmark::State& state, const std::string& path,
               brisvox::GraphOptimization level = brisvox::GraphOptimization::kAll, bool with_features = false) {
  if (!std::filesystem::exists(path)) {
    state.SkipWithError(("no model at " + path + ": build the brisvox_test_models target").c_str());
    return;
  }
  brisvox::SmartTurnConfig config;
  config.model_path = path;
  config.max_batch = 1;
  config.session.intra_op_threads = static_cast<int>(state.range(0));
  config.session.optimization = level;
  // BRISVOX_BENCH_ARENA=1: ONNX Runtime's CPU arena on (the engine's default has it off).
  if (const char* a = std::getenv("BRISVOX_BENCH_ARENA"); a != nullptr && a[0] == '1') config.session.cpu_arena = true;
  brisvox::SmartTurn model(config);
  brisvox::TurnFeatures features;
  std::vector<float> f(brisvox::kTurnFeatureValues);
  const auto audio = turn_audio();
  features.compute(audio, f);
  const float* fp = f.data();
  float p = 0;
  model.run(std::span(&fp, 1), std::span(&p, 1));  // warm
  for (auto _ : state) {
    if (with_features) features.compute(audio, f);
    model.run(std::span(&fp, 1), std::span(&p, 1));
    benchmark::DoNotOptimize(p);
  }
}

void BM_SmartTurnFp32(benchmark::State& state) { run_model(state, turn_model("smart_turn_v3_arch.onnx")); }
void BM_SmartTurnInt8(benchmark::State& state) { run_model(state, turn_model("smart_turn_v3_arch_int8.onnx")); }

std::string v32_path(benchmark::State& state) {
  try {
    return brisvox::resolve_turn_model("v3.2");
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return {};
  }
}
void BM_SmartTurnV32(benchmark::State& state) {
  if (const auto path = v32_path(state); !path.empty()) {
    run_model(state, path);
  }
}
// Arg: 0 disabled, 1 basic, 2 extended, 3 all (the default); one thread.
void BM_SmartTurnV32OptLevel(benchmark::State& state) {
  const auto level = static_cast<brisvox::GraphOptimization>(state.range(1));
  if (const auto path = v32_path(state); !path.empty()) run_model(state, path, level);
}
void BM_SmartTurnV32Analysis(benchmark::State& state) {
  if (const auto path = v32_path(state); !path.empty()) run_model(state, path, brisvox::GraphOptimization::kAll, true);
}
void BM_SmartTurnV32Profile(benchmark::State& state) {
  const char* prefix = std::getenv("BRISVOX_ORT_PROFILE");
  const auto path = prefix == nullptr ? std::string() : v32_path(state);
  if (path.empty()) {
    if (prefix == nullptr) state.SkipWithError("set BRISVOX_ORT_PROFILE=PREFIX to profile");
    return;
  }
  brisvox::SmartTurn engine_model({path, 1, {}});  // creates the process's ONNX Runtime environment
  Ort::SessionOptions options;  // the engine's settings (src/runtime/model_session.cpp), plus profiling
  options.SetIntraOpNumThreads(1);
  options.SetInterOpNumThreads(1);
  options.SetExecutionMode(ExecutionMode::ORT_SEQUENTIAL);
  options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  options.DisableCpuMemArena();
  options.EnableProfiling(prefix);
  Ort::Env env;
  Ort::Session session(env, path.c_str(), options);
  brisvox::TurnFeatures features;
  std::vector<float> f(brisvox::kTurnFeatureValues);
  features.compute(turn_audio(), f);
  const std::array<int64_t, 3> shape{1, brisvox::kTurnMels, brisvox::kTurnFrames};
  const auto mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  Ort::Value input = Ort::Value::CreateTensor<float>(mem, f.data(), f.size(), shape.data(), shape.size());
  const char* in_name = "input_features";
  const char* out_name = "logits";
  for (auto _ : state) {
    auto out = session.Run(Ort::RunOptions{nullptr}, &in_name, &input, 1, &out_name, 1);
    benchmark::DoNotOptimize(out[0].GetTensorData<float>());
  }
}

BENCHMARK(BM_SmartTurnV32)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SmartTurnV32OptLevel)->Args({1, 0})->Args({1, 1})->Args({1, 2})->Args({1, 3})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SmartTurnV32Analysis)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SmartTurnV32Profile)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SmartTurnFp32)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SmartTurnInt8)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
