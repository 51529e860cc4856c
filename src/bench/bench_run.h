// `brisvox bench` as a library call: its options, and the run that measures the phases and prints
// the report (a table, or one JSON object). The cli binds the options to the command line.
#pragma once

#include <string>

#include "brisvox/engine/engine_config.h"

namespace brisvox::bench {

struct BenchOptions {
  int num_streams = 200;
  double seconds = 10.0;
  double warmup_s = 1.0;
  int num_workers = 0;  // 0: one per core
  int max_batch = ModelSpec::family_defaults(ModelFamily::kSileroVad).max_batch;
  int gather_wait_us = ModelSpec::family_defaults(ModelFamily::kSileroVad).max_gather_wait_us;
  std::string model = "v5";
  std::string wav;
  bool realtime = false;
  bool fast = false;
  double latency_load = 0.8;
  int latency_streams = 0;  // 0: latency_load of the measured capacity
  int baseline_streams = 32;
  bool skip_load = false;
  bool skip_latency = false;
  bool skip_baseline = false;
  bool json = false;
  std::string turn_model;  // adds the end-of-turn phase
  int turn_runs = 20;
  std::string stt_model;   // adds the speech-to-text phase (bench_stt.h)
  int stt_streams = 1;
  std::string stt_window = "full";
  double stt_seconds = 30.0;
  int stt_threads = 1;
  int stt_workers = 1;
  int stt_max_batch = 8;
  std::string tts_voice;   // adds the text-to-speech phases (bench_tts.h)
  int tts_concurrency = 8;
  int tts_requests = 5;    // replies per client
  int tts_workers = 0;
  std::string tts_corpus;  // the throughput phase's texts
  bool tts_fast_start = true;
  std::string tts_reply;   // empty: TtsBenchSpec's
};

// Runs the phases and prints the report on stdout; 0 when done. Throws Error for bad options or
// when the model or the audio cannot be loaded.
int run_bench(const BenchOptions& options);

}  // namespace brisvox::bench
