// `brisvox bench`: the baseline, VAD as the peers run it. sherpa-onnx's VoiceActivityDetector
// and pipecat's SileroVADAnalyzer give every stream its own ONNX Runtime session (one intra-op
// thread) and run it once per 32 ms frame, a batch of one. Here B such streams share N threads,
// each thread looping over its B / N streams frame by frame as fast as it can, with the same
// audio and the same segmenter work per frame as the engine.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <thread>

#include "brisvox/error.h"
#include "brisvox/models/vad/silero_vad.h"
#include "brisvox/models/vad/streaming_segmenter.h"
#include "brisvox/runtime/runtime_info.h"
#include "bench/bench_runner.h"

namespace brisvox::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct BaselineStream {
  SileroVad vad;
  SileroStreamState state;
  StreamingSegmenter segmenter;
  std::size_t audio_pos = 0;
  std::uint64_t speech_segments = 0;

  BaselineStream(const SileroConfig& config, std::size_t offset)
      : vad(config), segmenter(16000, SegmenterParams{}), audio_pos(offset) {}

  // One frame through the stream's own session, as the peers do it.
  void step(const LoopedAudio& audio) {
    SileroStreamState* state_ptr = &state;
    const float* chunk = audio.samples.data() + audio_pos;
    float prob = 0.0f;
    vad.run(16000, std::span(&state_ptr, 1), std::span(&chunk, 1), std::span(&prob, 1));
    for (const SegmentEvent& e : segmenter.push(prob)) speech_segments += e.kind == SegmentEvent::Kind::kSpeechEnd ? 1 : 0;
    audio_pos = (audio_pos + kFrameSamples) % audio.length;
  }
};

struct alignas(64) ThreadCounter {
  std::atomic<std::uint64_t> frames{0};
};

}  // namespace

BaselineResult run_baseline(const BaselineSpec& spec, const LoopedAudio& audio) {
  if (spec.num_streams < 1 || spec.num_threads < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("baseline: needs at least one stream and one thread, got {} and {}", spec.num_streams,
                            spec.num_threads));
  }
  const auto num_streams = static_cast<std::size_t>(spec.num_streams);
  const auto num_threads = static_cast<std::size_t>(std::min(spec.num_threads, spec.num_streams));
  SileroConfig config;
  config.model_path = spec.model_path;
  config.max_batch = 1;
  config.session.intra_op_threads = 1;

  BaselineResult result;
  result.num_streams = spec.num_streams;
  result.num_threads = static_cast<int>(num_threads);

  // Sessions are created in two halves and the RSS slope between them taken, as for the engine:
  // each session runs a few frames first so that its working set counts.
  const long rss_before = resident_bytes();
  std::vector<std::unique_ptr<BaselineStream>> streams;
  streams.reserve(num_streams);
  auto create = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      streams.push_back(std::make_unique<BaselineStream>(config, audio.offset_for(i, num_streams)));
      for (int k = 0; k < 3; ++k) streams.back()->step(audio);
    }
  };
  const std::size_t first_half = num_streams / 2;
  create(0, first_half);
  const long rss_half = resident_bytes();
  create(first_half, num_streams);
  const long rss_all = resident_bytes();
  result.rss_per_stream_kib = first_half > 0 ? static_cast<double>(rss_all - rss_half) / 1024.0 /
                                                   static_cast<double>(num_streams - first_half)
                                             : static_cast<double>(rss_all - rss_before) / 1024.0;

  std::atomic<bool> stop{false};
  std::atomic<bool> timing{false};
  std::vector<ThreadCounter> counters(num_threads);
  std::vector<LatencyHistogram> run_times(num_threads);
  std::mutex error_mu;
  std::exception_ptr error;  // the first a thread threw (a failed Run), rethrown here
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < num_threads; ++t) {
    threads.emplace_back([&, t] {
      try {
        while (!stop.load(std::memory_order_relaxed)) {
          for (std::size_t i = t; i < num_streams; i += num_threads) {
            const bool timed = timing.load(std::memory_order_relaxed);
            const auto t0 = timed ? Clock::now() : Clock::time_point{};
            streams[i]->step(audio);
            if (timed) run_times[t].record(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
            counters[t].frames.fetch_add(1, std::memory_order_relaxed);
          }
        }
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) error = std::current_exception();
        stop.store(true, std::memory_order_relaxed);
      }
    });
  }
  auto total_frames = [&] {
    std::uint64_t n = 0;
    for (const auto& c : counters) n += c.frames.load(std::memory_order_relaxed);
    return n;
  };
  std::this_thread::sleep_for(std::chrono::duration<double>(spec.warmup_s));
  const auto t0 = Clock::now();
  const std::uint64_t f0 = total_frames();
  const double cpu0 = process_cpu_s();
  const double machine0 = machine_busy_cpu_s();
  timing.store(true, std::memory_order_relaxed);
  std::this_thread::sleep_for(std::chrono::duration<double>(spec.measure_s));
  timing.store(false, std::memory_order_relaxed);
  const std::uint64_t f1 = total_frames();
  const double cpu1 = process_cpu_s();
  const double machine1 = machine_busy_cpu_s();
  const auto t1 = Clock::now();
  stop.store(true, std::memory_order_relaxed);
  for (auto& th : threads) th.join();
  if (error) std::rethrow_exception(error);

  result.measured_s = std::chrono::duration<double>(t1 - t0).count();
  result.frames = f1 - f0;
  result.frames_per_s = static_cast<double>(result.frames) / result.measured_s;
  result.streams_per_core = result.frames_per_s / kFramesPerStreamSecond / static_cast<double>(num_threads);
  LatencyHistogram merged;
  for (const auto& h : run_times) merged.merge(h);
  result.run = merged;
  result.process_cpu_cores = (cpu1 - cpu0) / result.measured_s;
  result.other_cpu_cores = std::max(0.0, (machine1 - machine0) / result.measured_s - result.process_cpu_cores);
  return result;
}

}  // namespace brisvox::bench
