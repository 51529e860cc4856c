#include "bench/bench_turn.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "brisvox/latency_histogram.h"
#include "brisvox/models/model_paths.h"
#include "brisvox/models/turn/smart_turn.h"
#include "brisvox/models/turn/turn_features.h"

namespace brisvox::bench {
namespace {

// CPU time of the calling thread: with one intra-op thread the whole analysis runs on it, so this
// is its cost without the time a loaded machine took the core away.
double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}


}  // namespace

nlohmann::ordered_json run_turn_phase(const std::string& turn_model, std::span<const float> audio, int runs) {
  nlohmann::ordered_json out;
  out["model"] = turn_model;
  const std::string path = resolve_turn_model(turn_model);
  out["path"] = path;
  out["runs_per_setting"] = runs;
  TurnFeatures features;
  std::vector<float> f(kTurnFeatureValues);
  const std::size_t window = std::min<std::size_t>(audio.size(), kTurnWindowSamples);
  for (int threads : {1, 2, 4}) {
    SmartTurnConfig config;
    config.model_path = path;
    config.max_batch = 1;
    config.session.intra_op_threads = threads;
    SmartTurn model(config);
    LatencyHistogram total, feat, run, cpu;  // microseconds
    for (int i = -2; i < runs; ++i) {  // two warm-up analyses
      // A different 8 s of the recording each time.
      const std::size_t offset = (static_cast<std::size_t>(i + 2) * 16000 * 3) % (audio.size() - window + 1);
      const double cpu0 = thread_cpu_ms();
      const auto t0 = std::chrono::steady_clock::now();
      features.compute(audio.subspan(offset, window), f);
      const double f_ms = ms_since(t0);
      const auto t1 = std::chrono::steady_clock::now();
      const float* fp = f.data();
      float p = 0;
      model.run(std::span(&fp, 1), std::span(&p, 1));
      const double m_ms = ms_since(t1);
      const double cpu_ms = thread_cpu_ms() - cpu0;
      if (i < 0) continue;
      cpu.record(cpu_ms * 1000.0);
      feat.record(f_ms * 1000.0);
      run.record(m_ms * 1000.0);
      total.record((f_ms + m_ms) * 1000.0);
    }
    out["threads"][std::to_string(threads)] = {{"p50_ms", total.p50_us() / 1000.0},
                                               {"p99_ms", total.p99_us() / 1000.0},
                                               {"features_p50_ms", feat.p50_us() / 1000.0},
                                               {"model_p50_ms", run.p50_us() / 1000.0},
                                               // the calling thread's CPU time (all of it at 1 thread)
                                               {"thread_cpu_p50_ms", cpu.p50_us() / 1000.0}};
  }
  return out;
}

}  // namespace brisvox::bench
