// Piper TTS on the real voice (en_US-joe-medium, scripts/setup.sh): the espeak-ng phonemizer per
// sentence, the VITS model per sentence (short and long) with its real-time factor on one core
// (intra-op 1, as engine workers run), batched against single runs, and the time to the first
// audio of a two-sentence reply. The x_realtime counter is seconds of audio per second of wall
// time; the phonemizer's work happens in the espeak-ng children, so only its wall time means much.
//   taskset -c 0 build/release/bench/brisvox_microbench --benchmark_filter=Piper --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "brisvox/models/tts/piper_tts.h"

namespace {

const char* kShort = "How can I help you today?";
const char* kLong =
    "The committee, after months of deliberation and several heated debates about budget priorities, finally "
    "agreed to fund the new library, the community pool, and a modest expansion of the public transit system.";
const char* kReply = "Sure, I can help with that. Your appointment is confirmed for Monday at two in the afternoon.";

std::string voice_path(const char* file) { return std::string(BRISVOX_BENCH_MODELS_DIR) + "/piper/" + file; }

brisvox::PiperTts* tts(benchmark::State& state) {
  static std::unique_ptr<brisvox::PiperTts> instance;
  if (!instance) {
    const std::string path = voice_path("en_US-joe-medium.onnx");
    if (!std::filesystem::exists(path)) {
      state.SkipWithError(("no Piper voice at " + path + ": run scripts/setup.sh").c_str());
      return nullptr;
    }
    brisvox::PiperTtsConfig c;
    c.model_path = path;
    // BRISVOX_BENCH_ARENA=0: ONNX Runtime's CPU arena off (PiperTts's default has it on).
    if (const char* a = std::getenv("BRISVOX_BENCH_ARENA"); a != nullptr && a[0] == '0') c.session.cpu_arena = false;
    instance = std::make_unique<brisvox::PiperTts>(c);
  }
  return instance.get();
}

void BM_PiperPhonemize(benchmark::State& state, const char* text) {
  auto* t = tts(state);
  if (t == nullptr) return;
  for (auto _ : state) benchmark::DoNotOptimize(t->phonemizer().phonemize(text));
}
BENCHMARK_CAPTURE(BM_PiperPhonemize, short_sentence, kShort)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PiperPhonemize, long_sentence, kLong)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PiperVits(benchmark::State& state, const char* text) {
  auto* t = tts(state);
  if (t == nullptr) return;
  const auto sentences = t->phonemizer().phonemize(text);
  const std::vector<std::vector<std::int64_t>> ids = {brisvox::phonemes_to_ids(sentences.at(0), t->voice()).ids};
  std::vector<std::vector<float>> audio(1);
  double audio_s = 0;
  for (auto _ : state) {
    t->model().run(ids, t->voice().scales, 0, audio);
    audio_s += static_cast<double>(audio[0].size()) / t->voice().sample_rate_hz;
  }
  state.counters["ids"] = static_cast<double>(ids[0].size());
  state.counters["audio_s"] = static_cast<double>(audio[0].size()) / t->voice().sample_rate_hz;
  state.counters["x_realtime"] = benchmark::Counter(audio_s, benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_PiperVits, short_sentence, kShort)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_PiperVits, long_sentence, kLong)->Unit(benchmark::kMillisecond)->UseRealTime();

// B copies of one medium sentence in one run (the durations rewrite of the voice) against B
// single runs: time per sentence.
void BM_PiperVitsBatch(benchmark::State& state) {
  auto* t = tts(state);
  if (t == nullptr) return;
  const auto batch = static_cast<int>(state.range(0));
  const std::string path = voice_path("en_US-joe-medium.durations.onnx");
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("no durations rewrite of the voice: run scripts/setup.sh");
    return;
  }
  brisvox::PiperVitsConfig c;
  c.model_path = path;
  c.session = brisvox::piper_session_config();
  c.max_batch = batch;
  brisvox::PiperVits vits(c);
  const auto sentences = t->phonemizer().phonemize("Your appointment is confirmed for Monday at two.");
  const std::vector<std::vector<std::int64_t>> ids(static_cast<std::size_t>(batch),
                                                   brisvox::phonemes_to_ids(sentences.at(0), t->voice()).ids);
  std::vector<std::vector<float>> audio(static_cast<std::size_t>(batch));
  double audio_s = 0;
  for (auto _ : state) {
    vits.run(ids, t->voice().scales, 0, audio);
    for (const auto& a : audio) audio_s += static_cast<double>(a.size()) / t->voice().sample_rate_hz;
  }
  state.counters["x_realtime"] = benchmark::Counter(audio_s, benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_PiperVitsBatch)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

// A two-sentence reply: start() (checks, phonemizes both) and the first next() (the first
// sentence's audio): the latency before the first sample can be played.
void BM_PiperTimeToFirstAudio(benchmark::State& state) {
  auto* t = tts(state);
  if (t == nullptr) return;
  brisvox::PiperRequest r;
  r.text = kReply;
  brisvox::PiperChunk chunk;
  for (auto _ : state) {
    brisvox::PiperSynthesis s = t->start(r);
    t->next(s, chunk);
    benchmark::DoNotOptimize(chunk.samples.data());
  }
  state.counters["first_audio_s"] = static_cast<double>(chunk.samples.size()) / chunk.sample_rate_hz;
}
BENCHMARK(BM_PiperTimeToFirstAudio)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_PiperWholeReply(benchmark::State& state) {
  auto* t = tts(state);
  if (t == nullptr) return;
  brisvox::PiperRequest r;
  r.text = kReply;
  brisvox::PiperChunk chunk;
  double audio_s = 0;
  for (auto _ : state) {
    brisvox::PiperSynthesis s = t->start(r);
    while (t->next(s, chunk)) audio_s += static_cast<double>(chunk.samples.size()) / chunk.sample_rate_hz;
  }
  state.counters["x_realtime"] = benchmark::Counter(audio_s, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PiperWholeReply)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
