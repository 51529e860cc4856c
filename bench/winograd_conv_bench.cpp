// WinogradConv (src/models/tts/piper/winograd_conv.h) on the Piper decoder's layer shapes, on each
// instruction set this CPU has, with the direct convolution's arithmetic rate as a counter
// (2 O C r T / time: what ONNX Runtime's convolution would need to match it); and a generated
// HiFi-GAN stage (tools/piper/make_resblock_models.py: 32 channels, six residual convolutions)
// rewritten without pass 6 (ONNX Runtime's NCHWc convolutions) and with it, one intra-op thread.
//   taskset -c 1 build/release/bench/brisvox_microbench --benchmark_filter='Winograd|ResblockStage'
#include <benchmark/benchmark.h>

#include <onnxruntime_cxx_api.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "brisvox/runtime/session_config.h"
#include "models/tts/piper/winograd_op.h"
#include "runtime/model_session.h"
#include "models/tts/piper/winograd_conv.h"

namespace {

using brisvox::piper::WinogradConv;
using brisvox::piper::WinogradIsa;

std::vector<float> random_values(size_t n, float scale) {
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(rng);
  return v;
}

// Args: channels, taps, dilation, length, instruction set (1 avx512, 2 avx2, 3 generic).
void BM_WinogradConv(benchmark::State& state) {
  const int64_t c = state.range(0), taps = state.range(1), d = state.range(2), length = state.range(3);
  const auto isa = static_cast<WinogradIsa>(state.range(4));
  const auto available = WinogradConv::available();
  if (std::find(available.begin(), available.end(), isa) == available.end()) {
    state.SkipWithError((std::string("this CPU has no ") + WinogradConv::name(isa)).c_str());
    return;
  }
  const auto w = random_values(size_t(c * c * taps), 0.05f), b = random_values(size_t(c), 0.1f);
  const auto x = random_values(size_t(c * length), 1.f), residual = random_values(size_t(c * length), 1.f);
  std::vector<float> y(size_t(c * length));
  const WinogradConv conv(w, b, c, c, taps, d, 0.1f);
  for (auto _ : state) {
    conv.run(x.data(), residual.data(), y.data(), 1, length, isa);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetLabel(WinogradConv::name(isa));
  state.counters["direct_GFLOPs"] =
      benchmark::Counter(2.0 * double(c * c * taps * length) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
// The decoder's stages for a ~2.4 s sentence (211 frames): 128 channels at 1688 samples, 64 at
// 13504, 32 at 54016; each stage has 3-, 5- and 7-tap layers.
BENCHMARK(BM_WinogradConv)
    ->ArgNames({"C", "taps", "d", "T", "isa"})
    ->ArgsProduct({{128}, {3, 7}, {3}, {1688}, {1, 2}})
    ->ArgsProduct({{64}, {3, 7}, {3}, {13504}, {1, 2}})
    ->ArgsProduct({{32}, {3, 5, 7}, {3}, {54016}, {1, 2}})
    ->Unit(benchmark::kMillisecond);

// Arg: 0 the stage's rewrite without pass 6, 1 with it (WinogradConv nodes); length 54016.
void BM_ResblockStage(benchmark::State& state) {
  const std::string file = std::string(BRISVOX_BENCH_GENERATED_DIR) +
                           (state.range(0) ? "/resblock_stage.conv2d.onnx" : "/resblock_stage.portable.onnx");
  if (!std::filesystem::exists(file)) {
    state.SkipWithError(("no " + file + ": build the target brisvox_test_models").c_str());
    return;
  }
  brisvox::piper::register_winograd_op();
  brisvox::SessionConfig config;
  config.intra_op_threads = 1;
  auto session = brisvox::runtime::ModelSession::load_file(file, config);
  const int64_t length = 54016;
  auto x = random_values(size_t(32 * length), 1.f);
  const std::array<int64_t, 3> shape{1, 32, length};
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  Ort::Value input = Ort::Value::CreateTensor<float>(cpu, x.data(), x.size(), shape.data(), shape.size());
  const char* in_name = "x";
  const char* out_name = "y";
  for (auto _ : state) {
    auto out = session.session().Run(session.run_options(), &in_name, &input, 1, &out_name, 1);
    benchmark::DoNotOptimize(out);
  }
  state.SetLabel(state.range(0) ? "with pass 6 (WinogradConv)" : "--portable (ONNX Runtime's NCHWc Conv)");
}
BENCHMARK(BM_ResblockStage)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
