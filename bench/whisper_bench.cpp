// Whisper tiny.en (real weights, converted by scripts/setup.sh): the encoder per segment at full
// and fit windows, the batched decoder step, and a whole 3 s utterance on one stream.
//   build/release/bench/brisvox_microbench --benchmark_filter=Whisper --benchmark_min_time=2s
// Arguments: encoder (frames, batch, intra-op threads); decoder step (batch, audio positions per
// lane, threads); transcribe (window 0 = full / 1 = fit, threads).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/models/stt/whisper_decoder.h"
#include "brisvox/models/stt/whisper_encoder.h"
#include "brisvox/models/stt/whisper_features.h"
#include "brisvox/models/stt/whisper_search.h"
#include "brisvox/models/stt/whisper_transcriber.h"

namespace {

// The bundled folder the Whisper benchmarks load: whisper-tiny.en, or another one of
// third_party/models given by BRISVOX_BENCH_WHISPER (whisper-tiny.en-int8: the int8 weights).
std::string whisper_folder() {
  const char* name = std::getenv("BRISVOX_BENCH_WHISPER");
  return std::string(BRISVOX_BENCH_MODELS_DIR) + "/" + (name && *name ? name : "whisper-tiny.en");
}

const brisvox::WhisperModel* tiny_en(benchmark::State& state) {
  static const std::optional<brisvox::WhisperModel> model = []() -> std::optional<brisvox::WhisperModel> {
    const std::string dir = whisper_folder();
    if (!std::filesystem::exists(dir + "/whisper.json")) return std::nullopt;
    return brisvox::WhisperModel::load(dir);
  }();
  static const std::string missing = "no " + whisper_folder() + ": run scripts/setup.sh";
  if (!model) state.SkipWithError(missing.c_str());
  return model ? &*model : nullptr;
}

// A real 3.16 s prompt (8 kHz): "You are currently the only person in this conference."
const char* kUtterance = "/usr/share/asterisk/sounds/en/conf-onlyperson.wav";

std::vector<float> utterance_16k() {
  const brisvox::Audio a = brisvox::load_audio(kUtterance);
  return brisvox::resample(a.samples, a.sample_rate_hz, 16000);
}

void BM_WhisperEncoder(benchmark::State& state) {
  const brisvox::WhisperModel* model = tiny_en(state);
  if (!model) return;
  const int frames = static_cast<int>(state.range(0));
  const int batch = static_cast<int>(state.range(1));
  brisvox::WhisperEncoderConfig config;
  config.max_batch = batch;
  config.session.intra_op_threads = static_cast<int>(state.range(2));
  // BRISVOX_BENCH_ARENA=1: ONNX Runtime's CPU arena on (the engine's default has it off).
  if (const char* a = std::getenv("BRISVOX_BENCH_ARENA"); a != nullptr && a[0] == '1') config.session.cpu_arena = true;
  brisvox::WhisperEncoder encoder(*model, config);
  brisvox::WhisperFeatures features;
  std::vector<float> mel(80 * 3000);
  features.compute(utterance_16k(), frames == 3000 ? brisvox::WhisperWindow::kFull : brisvox::WhisperWindow::kFit, mel);
  const int positions = frames / 2;
  std::vector<std::vector<float>> storage(static_cast<std::size_t>(batch),
                                          std::vector<float>(encoder.output_floats(positions)));
  std::vector<const float*> mels(static_cast<std::size_t>(batch), mel.data());
  std::vector<brisvox::WhisperEncoderOutput> outs;
  for (auto& s : storage) outs.push_back(encoder.output_in(s, positions));
  encoder.run(frames, mels, outs);  // warm
  for (auto _ : state) encoder.run(frames, mels, outs);
  // Seconds (wall) per segment; Google Benchmark prints 0.25 as "250m".
  state.counters["s_per_segment"] = benchmark::Counter(
      static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_WhisperEncoder)
    ->ArgNames({"frames", "batch", "threads"})
    ->Args({3000, 1, 1})
    ->Args({3000, 4, 1})
    ->Args({1000, 1, 1})
    ->Args({1000, 4, 1})
    ->Args({3000, 1, 2})
    ->Args({1000, 1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_WhisperDecoderStep(benchmark::State& state) {
  const brisvox::WhisperModel* model = tiny_en(state);
  if (!model) return;
  const int batch = static_cast<int>(state.range(0));
  const int audio = static_cast<int>(state.range(1));
  brisvox::WhisperDecoderConfig config;
  config.max_lanes = batch;
  config.max_audio_positions = audio;
  config.session.intra_op_threads = static_cast<int>(state.range(2));
  brisvox::WhisperDecoder decoder(*model, config);
  brisvox::WhisperEncoder encoder(*model, {});
  brisvox::WhisperFeatures features;
  std::vector<float> mel(80 * 3000);
  const int frames = features.compute(utterance_16k(), audio == 1500 ? brisvox::WhisperWindow::kFull : brisvox::WhisperWindow::kFit, mel);
  for (int s = 0; s < batch; ++s) {
    decoder.acquire();
    const float* p = mel.data();
    const brisvox::WhisperEncoderOutput out = decoder.begin(s, frames / 2);
    encoder.run(frames, std::span(&p, 1), std::span(&out, 1));
  }
  std::vector<int> tokens(static_cast<std::size_t>(batch), model->config().tokens.sot);
  // Steady state: the sequences restart before their caches fill (a step costs the same at every
  // position: the caches are read whole and masked).
  auto step = [&] {
    decoder.step(tokens);
    for (int s = 0; s < batch; ++s) {
      tokens[static_cast<std::size_t>(s)] = 400 + decoder.position(s);
      if (decoder.position(s) == decoder.max_tokens()) decoder.begin(s, frames / 2);
    }
  };
  step();
  for (auto _ : state) step();
  // Seconds (wall) per sequence-token: the step's time divided by the batch.
  state.counters["s_per_token"] = benchmark::Counter(
      static_cast<double>(batch), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_WhisperDecoderStep)
    ->ArgNames({"batch", "audio", "threads"})
    ->Args({1, 1500, 1})
    ->Args({8, 1500, 1})
    ->Args({32, 1500, 1})
    ->Args({1, 500, 1})
    ->Args({8, 500, 1})
    ->Args({32, 500, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_WhisperTranscribe3s(benchmark::State& state) {
  const brisvox::WhisperModel* model = tiny_en(state);
  if (!model) return;
  brisvox::WhisperTranscriberConfig config;
  config.max_batch = 1;
  config.session.intra_op_threads = static_cast<int>(state.range(1));
  brisvox::WhisperTranscriber transcriber(*model, config);
  const brisvox::Audio audio = brisvox::load_audio(kUtterance);
  brisvox::WhisperTranscribeOptions options;
  options.window = state.range(0) == 0 ? brisvox::WhisperWindow::kFull : brisvox::WhisperWindow::kFit;
  std::size_t tokens = 0;
  transcriber.transcribe(audio.samples, audio.sample_rate_hz, options);  // warm
  for (auto _ : state) {
    const brisvox::WhisperTranscript t = transcriber.transcribe(audio.samples, audio.sample_rate_hz, options);
    tokens = t.segments.at(0).tokens.size();
  }
  state.counters["tokens"] = static_cast<double>(tokens);
}
BENCHMARK(BM_WhisperTranscribe3s)
    ->ArgNames({"fit", "threads"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 2})
    ->Args({1, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

// The greedy search's share of a step, per sequence: suppression, argmax and the log-softmax
// normaliser over the 51864 logits.
void BM_WhisperSearchConsume(benchmark::State& state) {
  const brisvox::WhisperModel* model = tiny_en(state);
  if (!model) return;
  const brisvox::WhisperSearch search(model->config(), {});
  brisvox::WhisperSequence seq(search);
  std::vector<float> logits(static_cast<std::size_t>(model->config().dims.n_vocab));
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>((i * 7919) % 1000) / 100.0f;
  for (auto _ : state) {
    if (seq.done()) seq.reset();
    seq.consume(logits);
    benchmark::DoNotOptimize(seq.sum_logprob());
  }
}
BENCHMARK(BM_WhisperSearchConsume)->Unit(benchmark::kMicrosecond);
