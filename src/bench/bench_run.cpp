// `brisvox bench`: how many real-time streams this machine serves, at what latency and memory,
// against the way the peers run Silero VAD (a session per stream, one Run per frame), in one run.
//
// Phases, each a warm-up and then a measured window of --seconds:
//   load      --streams streams on the engine, fed as fast as it takes them (--fast, the
//             default: the capacity) or paced in real time (--realtime: kept up? latency).
//   latency   after a fast load phase: a paced run at --latency-load (80 %) of the measured
//             capacity, for the added-latency percentiles a deployment would see.
//   baseline  --baseline-streams streams, one ONNX Runtime session each, on as many threads as
//             the engine has workers.
// The measurements themselves are in bench_engine.cpp and bench_baseline.cpp.
#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "brisvox/error.h"
#include "brisvox/models/model_paths.h"
#include "brisvox/runtime/runtime_info.h"
#include "bench/bench_run.h"
#include "bench/bench_runner.h"
#include "bench/bench_stt.h"
#include "bench/bench_tts.h"
#include "bench/bench_turn.h"

namespace brisvox::bench {
namespace {

using Json = nlohmann::ordered_json;



// Cores this process may run on (what nproc prints), which a container or taskset may limit
// below std::thread::hardware_concurrency().
int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  for (const char* key : {"model name", "Hardware", "cpu model", "Processor"}) {
    in.clear();
    in.seekg(0);
    while (std::getline(in, line)) {
      if (line.rfind(key, 0) != 0) continue;
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const auto begin = line.find_first_not_of(" \t", colon + 1);
      if (begin != std::string::npos) return line.substr(begin);
    }
  }
  return "unknown";
}

double load_average_1m() {
  std::ifstream in("/proc/loadavg");
  double load = -1.0;
  in >> load;
  return load;
}

// The sample setup.sh fetches next to the models, unless --wav names another file.
std::string default_wav() {
  std::vector<std::string> candidates{std::string(BRISVOX_DEFAULT_SAMPLE_WAV)};
  candidates.push_back((std::filesystem::path(models_dir()).parent_path() / "audio" / "sample.wav").string());
  for (const auto& c : candidates) {
    if (std::filesystem::exists(c)) return c;
  }
  throw Error(ErrorCode::kIo, fmt::format("the bundled sample '{}' is missing: run scripts/setup.sh, or pass --wav FILE",
                                          candidates.front()));
}

void check(bool ok, const std::string& message) {
  if (!ok) throw Error(ErrorCode::kInvalidArgument, message);
}

double ms(double us) { return us / 1000.0; }

Json quantiles_ms(const LatencyHistogram& q) {
  return {{"count", q.count()}, {"mean", ms(q.mean_us())}, {"p50", ms(q.p50_us())}, {"p90", ms(q.p90_us())},
          {"p99", ms(q.p99_us())}, {"p999", ms(q.p999_us())}, {"max", ms(q.max_us())}};
}

Json quantiles_us(const LatencyHistogram& q) {
  return {{"count", q.count()}, {"mean", q.mean_us()}, {"p50", q.p50_us()}, {"p90", q.p90_us()},
          {"p99", q.p99_us()}, {"p999", q.p999_us()}, {"max", q.max_us()}};
}

Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

Json engine_phase_json(const EnginePhaseResult& r, double warmup_s) {
  Json j;
  j["mode"] = r.realtime ? "realtime" : "fast";
  j["streams"] = r.num_streams;
  j["workers"] = r.num_workers;
  j["warmup_s"] = warmup_s;
  j["seconds"] = r.measured_s;
  j["frames_fed"] = r.frames_fed;
  j["frames_processed"] = r.frames_processed;
  j["frames_per_s"] = r.frames_per_s;
  if (!r.realtime) j["streams_per_core"] = r.streams_per_core;
  if (r.realtime) j["kept_up"] = r.kept_up;
  j["backlog_frames_end"] = r.backlog_frames_end;
  j["backlog_frames_max"] = r.backlog_frames_max;
  j["samples_rejected"] = r.samples_rejected;
  j["overload_events"] = r.overload_events;
  j["events_dropped"] = r.events_dropped;
  j["run_errors"] = r.run_errors;
  j["speech_segments"] = r.speech_segments;
  j["mean_batch_size"] = r.mean_batch;
  Json sizes = Json::object();
  for (std::size_t b = 1; b < r.batch_size_counts.size(); ++b) {
    if (r.batch_size_counts[b] > 0) sizes[std::to_string(b)] = r.batch_size_counts[b];
  }
  j["batch_size_counts"] = sizes;
  j["inference_us_per_batch"] = r.inference_us_per_batch;
  j["inference_us_per_frame"] = r.inference_us_per_frame;
  j["added_latency_ms"] = quantiles_ms(r.added_latency);
  j["engine_stats_since_start"] = {{"added_latency_ms", quantiles_ms(r.added_latency_engine)},
                                   {"queue_delay_ms", quantiles_ms(r.queue_delay_engine)},
                                   {"inference_us", quantiles_us(r.inference_engine)}};
  j["process_cpu_cores"] = r.process_cpu_cores;
  j["feeder_cpu_cores"] = r.feeder_cpu_cores;
  j["other_processes_cpu_cores"] = r.other_cpu_cores;
  if (r.rss_per_stream_kib) j["rss_per_stream_kib"] = *r.rss_per_stream_kib;
  j["rss_before_streams_mib"] = static_cast<double>(r.rss_before_streams_bytes) / 1048576.0;
  j["rss_after_streams_mib"] = static_cast<double>(r.rss_after_streams_bytes) / 1048576.0;
  return j;
}

Json baseline_json(const BaselineResult& r, double warmup_s) {
  return {{"streams", r.num_streams},
          {"threads", r.num_threads},
          {"warmup_s", warmup_s},
          {"seconds", r.measured_s},
          {"frames", r.frames},
          {"frames_per_s", r.frames_per_s},
          {"streams_per_core", r.streams_per_core},
          {"run_us", quantiles_us(r.run)},
          {"process_cpu_cores", r.process_cpu_cores},
          {"other_processes_cpu_cores", r.other_cpu_cores},
          {"rss_per_stream_kib", optional_number(r.rss_per_stream_kib)}};
}

// Other processes busy during a window skew it: say so next to the numbers.
const char* noise_note(double other_cpu_cores) {
  return other_cpu_cores > 0.1 ? " (NOISY: rerun on a quiet machine)" : "";
}

void print_engine_phase(const char* title, const EnginePhaseResult& r) {
  fmt::print("\n{}: {} streams, {}, {:.1f} s measured\n", title, r.num_streams,
             r.realtime ? "paced in real time (512 samples / 32 ms each)" : "as fast as possible", r.measured_s);
  fmt::print("  frames/s            {:>10.0f}   ({} frames processed, {} fed)\n", r.frames_per_s, r.frames_processed,
             r.frames_fed);
  if (!r.realtime) {
    fmt::print("  streams per core    {:>10.1f}   real-time 16 kHz streams one worker keeps up with\n",
               r.streams_per_core);
  } else {
    fmt::print("  kept up             {:>10}   backlog {} frames at the end, {} at worst; {} samples refused\n",
               r.kept_up ? "yes" : "NO", r.backlog_frames_end, r.backlog_frames_max, r.samples_rejected);
    fmt::print("  added latency ms    p50 {:.2f}  p90 {:.2f}  p99 {:.2f}  p99.9 {:.2f}  max {:.2f}\n",
               ms(r.added_latency.p50_us()), ms(r.added_latency.p90_us()), ms(r.added_latency.p99_us()),
               ms(r.added_latency.p999_us()), ms(r.added_latency.max_us()));
    fmt::print("  queue delay ms      p50 {:.2f}  p99 {:.2f}   (since engine start)\n",
               ms(r.queue_delay_engine.p50_us()), ms(r.queue_delay_engine.p99_us()));
  }
  fmt::print("  mean batch          {:>10.1f}   one Run {:.0f} us, {:.1f} us per frame\n", r.mean_batch,
             r.inference_us_per_batch, r.inference_us_per_frame);
  fmt::print("  CPU                 {:>10.2f}   cores busy (feeder thread {:.3f}); other processes {:.2f}{}\n",
             r.process_cpu_cores, r.feeder_cpu_cores, r.other_cpu_cores, noise_note(r.other_cpu_cores));
  if (r.overload_events || r.run_errors || r.events_dropped) {
    fmt::print("  trouble             {} overload events, {} run errors, {} events dropped\n", r.overload_events,
               r.run_errors, r.events_dropped);
  }
  if (r.rss_per_stream_kib) fmt::print("  RSS per stream      {:>10.1f}   KiB\n", *r.rss_per_stream_kib);
}

void print_tts(const Json& tts) {
  const auto line = [](const char* title, const Json& p) {
    const Json& f = p["first_audio_ms"];
    const Json& w = p["whole_reply_ms"];
    fmt::print("  {:<18}  first audio p50 {:.0f} ms, p99 {:.0f} ms, max {:.0f} ms; whole reply p50 {:.0f} ms; "
               "{} replies, {} with a playback gap; {:.1f}x real time ({:.1f}x per core); CPU {:.2f} cores (machine "
               "{:.2f})\n",
               title, f["p50"].get<double>(), f["p99"].get<double>(), f["max"].get<double>(), w["p50"].get<double>(),
               p["replies"].get<std::size_t>(), p["replies_with_a_playback_gap"].get<std::size_t>(),
               p["x_realtime"].get<double>(), p["x_realtime_per_core"].get<double>(),
               p["process_cpu_cores"].get<double>(), p["machine_busy_cores"].get<double>());
  };
  fmt::print("\ntext to speech: {} ({} workers), reply \"{}\"\n", tts["voice"].get<std::string>(),
             tts["workers"].get<int>(), tts["reply"].get<std::string>());
  line("alone", tts["alone"]);
  line(fmt::format("{} clients, loop", tts["concurrent"]["clients"].get<int>()).c_str(), tts["concurrent"]);
  line(fmt::format("{} clients, burst", tts["burst"]["clients"].get<int>()).c_str(), tts["burst"]);
  if (tts.contains("throughput")) {
    const Json& t = tts["throughput"];
    fmt::print("  throughput          {} texts of {}: {:.1f} s of audio in {:.2f} s, {:.1f}x real time ({:.1f}x per "
               "core; sessions moved between workers {})\n",
               t["texts"].get<std::size_t>(), t["corpus"].get<std::string>(), t["audio_s"].get<double>(),
               t["wall_s"].get<double>(), t["x_realtime"].get<double>(), t["x_realtime_per_core"].get<double>(),
               t["sessions_moved"].get<std::uint64_t>());
  }
}

}  // namespace

int run_bench(const BenchOptions& o) {
  check(!(o.realtime && o.fast), "--realtime and --fast exclude each other");
  const int cores = available_cores();
  const int workers = o.num_workers > 0 ? o.num_workers : cores;
  EngineConfig engine;
  ModelSpec& vad = engine.models.at(0);
  vad.path = resolve_vad_model(o.model);
  vad.num_workers = workers;
  vad.max_batch = o.max_batch;
  vad.max_gather_wait_us = o.gather_wait_us;
  engine.validate();
  const LoopedAudio audio = LoopedAudio::load(o.wav.empty() ? default_wav() : o.wav);
  const bool latency_phase = !o.realtime && !o.skip_latency;
  check(o.stt_window == "full" || o.stt_window == "fit", "--stt-window must be full or fit");
  check(!(o.skip_load && o.skip_baseline && !latency_phase && o.turn_model.empty() && o.stt_model.empty() &&
          o.tts_voice.empty()),
        "every phase is skipped: nothing to measure");

  Json report;
  report["brisvox_version"] = BRISVOX_VERSION;
  report["onnxruntime_version"] = ort_version();
  report["machine"] = {{"cores", cores},
                       {"hardware_concurrency", std::thread::hardware_concurrency()},
                       {"cpu_model", cpu_model()},
                       {"load_average_1m_at_start", load_average_1m()}};
  const auto progress = [&](const std::string& line) {
    if (!o.json || isatty(STDERR_FILENO)) fmt::print(stderr, "brisvox bench: {}\n", line);
  };

  std::optional<EnginePhaseResult> load;
  std::optional<EnginePhaseResult> latency;
  std::optional<BaselineResult> baseline;
  if (!o.skip_load) {
    // +1 s: the streams open in two parts, 0.5 s each, for the RSS slope.
    progress(fmt::format("load phase: {} streams, {}, {} + {} s", o.num_streams, o.realtime ? "realtime" : "fast",
                         o.warmup_s + 1.0, o.seconds));
    EnginePhaseSpec spec;
    spec.name = "load";
    spec.engine = engine;
    spec.num_streams = o.num_streams;
    spec.realtime = o.realtime;
    spec.warmup_s = o.warmup_s;
    spec.measure_s = o.seconds;
    spec.measure_rss = true;
    load = run_engine_phase(spec, audio);
  }
  int latency_streams = 0;
  if (latency_phase) {
    if (o.latency_streams > 0) {
      latency_streams = o.latency_streams;
    } else if (load) {
      latency_streams = std::max(1, static_cast<int>(std::lround(o.latency_load * load->streams_per_core * workers)));
    } else {
      latency_streams = o.num_streams;
    }
    progress(fmt::format("latency phase: {} streams, realtime, {} + {} s", latency_streams,
                         o.warmup_s + (load ? 0.0 : 1.0), o.seconds));
    EnginePhaseSpec spec;
    spec.name = "latency";
    spec.engine = engine;
    spec.num_streams = latency_streams;
    spec.realtime = true;
    spec.warmup_s = o.warmup_s;
    spec.measure_s = o.seconds;
    spec.measure_rss = !load;
    latency = run_engine_phase(spec, audio);
  }
  if (!o.skip_baseline) {
    progress(fmt::format("baseline: {} sessions on {} threads, fast, {} + {} s", o.baseline_streams, workers,
                         o.warmup_s, o.seconds));
    BaselineSpec spec;
    spec.model_path = vad.path;
    spec.num_streams = o.baseline_streams;
    spec.num_threads = workers;
    spec.warmup_s = o.warmup_s;
    spec.measure_s = o.seconds;
    baseline = run_baseline(spec, audio);
  }

  nlohmann::ordered_json turn;
  if (!o.turn_model.empty()) {
    progress(fmt::format("turn: Smart Turn {}, {} analyses at 1, 2 and 4 threads", o.turn_model, o.turn_runs));
    turn = run_turn_phase(o.turn_model, std::span(audio.samples.data(), audio.length), o.turn_runs);
  }
  nlohmann::ordered_json stt;
  if (!o.stt_model.empty()) {
    progress(fmt::format("stt: Whisper {}, {} real-time stream(s), {} window, 5 + {} s", o.stt_model, o.stt_streams,
                         o.stt_window, o.stt_seconds));
    SttPhaseSpec spec;
    spec.stt_model = o.stt_model;
    spec.vad_model = vad.path;
    spec.num_streams = o.stt_streams;
    spec.vad_workers = 1;
    spec.stt_workers = o.stt_workers;
    spec.stt_threads = o.stt_threads;
    spec.stt_max_batch = o.stt_max_batch;
    spec.window = o.stt_window == "fit" ? WhisperWindow::kFit : WhisperWindow::kFull;
    spec.seconds = o.stt_seconds;
    stt = run_stt_phase(spec, audio);
  }

  nlohmann::ordered_json tts;
  if (!o.tts_voice.empty()) {
    progress(fmt::format("tts: Piper {}, one client alone, then {} clients x {} two-sentence replies{}", o.tts_voice,
                         o.tts_concurrency, o.tts_requests, o.tts_corpus.empty() ? "" : ", then the corpus"));
    TtsBenchSpec spec;
    spec.voice = o.tts_voice;
    spec.concurrency = o.tts_concurrency;
    spec.requests_per_client = o.tts_requests;
    spec.workers = o.tts_workers;
    spec.corpus = o.tts_corpus;
    spec.fast_start = o.tts_fast_start;
    if (!o.tts_reply.empty()) spec.reply = o.tts_reply;
    tts = run_tts_phase(spec, cores);
  }

  // The headline numbers. Capacity only from a fast load phase; latency from the paced phase.
  const EnginePhaseResult* paced = latency ? &*latency : (load && load->realtime ? &*load : nullptr);
  const EnginePhaseResult* first_engine = load ? &*load : (latency ? &*latency : nullptr);
  std::optional<double> streams_per_core;
  if (load && !load->realtime) streams_per_core = load->streams_per_core;
  std::optional<double> baseline_per_core;
  if (baseline) baseline_per_core = baseline->streams_per_core;
  std::optional<double> speedup;
  if (streams_per_core && baseline_per_core && *baseline_per_core > 0) speedup = *streams_per_core / *baseline_per_core;

  report["streams_per_core"] = optional_number(streams_per_core);
  report["baseline_streams_per_core"] = optional_number(baseline_per_core);
  report["speedup_vs_baseline"] = optional_number(speedup);
  report["p50_added_latency_ms"] = paced ? Json(ms(paced->added_latency.p50_us())) : Json(nullptr);
  report["p99_added_latency_ms"] = paced ? Json(ms(paced->added_latency.p99_us())) : Json(nullptr);
  report["p999_added_latency_ms"] = paced ? Json(ms(paced->added_latency.p999_us())) : Json(nullptr);
  report["latency_streams"] = paced ? Json(paced->num_streams) : Json(nullptr);
  report["latency_kept_up"] = paced ? Json(paced->kept_up) : Json(nullptr);
  report["rss_per_stream_kib"] = first_engine ? optional_number(first_engine->rss_per_stream_kib) : Json(nullptr);
  report["baseline_rss_per_stream_kib"] = baseline ? optional_number(baseline->rss_per_stream_kib) : Json(nullptr);
  report["model"] = o.model;
  report["model_path"] = vad.path;
  report["workers"] = workers;
  report["max_batch"] = o.max_batch;
  report["gather_wait_us"] = o.gather_wait_us;
  report["streams"] = o.num_streams;
  report["mode"] = o.realtime ? "realtime" : "fast";
  // Batch size and Run cost at full load; queue delay where it means something (paced).
  report["mean_batch_size"] = first_engine ? Json(first_engine->mean_batch) : Json(nullptr);
  report["inference_us_per_frame"] = first_engine ? Json(first_engine->inference_us_per_frame) : Json(nullptr);
  report["inference_p50_us"] = first_engine ? Json(first_engine->inference_engine.p50_us()) : Json(nullptr);
  report["inference_p99_us"] = first_engine ? Json(first_engine->inference_engine.p99_us()) : Json(nullptr);
  report["latency_mean_batch_size"] = paced ? Json(paced->mean_batch) : Json(nullptr);
  report["queue_delay_p50_ms"] = paced ? Json(ms(paced->queue_delay_engine.p50_us())) : Json(nullptr);
  report["queue_delay_p99_ms"] = paced ? Json(ms(paced->queue_delay_engine.p99_us())) : Json(nullptr);
  report["baseline_run_p50_us"] = baseline ? Json(baseline->run.p50_us()) : Json(nullptr);
  report["baseline_run_p99_us"] = baseline ? Json(baseline->run.p99_us()) : Json(nullptr);
  report["audio"] = {{"file", audio.source}, {"source_rate_hz", audio.source_rate_hz},
                     {"duration_s", static_cast<double>(audio.length) / 16000.0}};
  Json phases = Json::object();
  if (load) phases["load"] = engine_phase_json(*load, o.warmup_s);
  if (latency) {
    phases["latency"] = engine_phase_json(*latency, o.warmup_s);
    phases["latency"]["load_fraction"] = o.latency_streams > 0 || !load ? Json(nullptr) : Json(o.latency_load);
  }
  if (baseline) phases["baseline"] = baseline_json(*baseline, o.warmup_s);
  report["turn_latency_ms_p50"] = turn.is_null() ? Json(nullptr) : Json(turn["threads"]["1"]["p50_ms"]);
  report["turn_latency_ms_p99"] = turn.is_null() ? Json(nullptr) : Json(turn["threads"]["1"]["p99_ms"]);
  if (!turn.is_null()) phases["turn"] = turn;
  if (!stt.is_null()) phases["stt"] = stt;
  report["tts_first_audio_ms_p50"] = tts.is_null() ? Json(nullptr) : tts["concurrent"]["first_audio_ms"]["p50"];
  report["tts_first_audio_ms_p99"] = tts.is_null() ? Json(nullptr) : tts["concurrent"]["first_audio_ms"]["p99"];
  report["tts_x_realtime_per_core"] = tts.is_null() ? Json(nullptr) : tts["concurrent"]["x_realtime_per_core"];
  if (!tts.is_null()) phases["tts"] = tts;
  report["phases"] = phases;

  if (o.json) {
    fmt::print("{}\n", report.dump(2));
    return 0;
  }
  if (!o.skip_load || latency_phase || !o.skip_baseline) {
    fmt::print("brisvox bench: Silero VAD {} ({}), {} workers, max batch {}, gather wait {} us\n", o.model,
               vad.path, workers, o.max_batch, o.gather_wait_us);
  }
  fmt::print("machine: {} cores, {}, load average {:.2f} at start; ONNX Runtime {}\n", cores,
             report["machine"]["cpu_model"].get<std::string>(), load_average_1m(), ort_version());
  fmt::print("audio: {} ({:.1f} s, looped from a different offset for each stream)\n", audio.source,
             static_cast<double>(audio.length) / 16000.0);
  if (load) print_engine_phase(load->realtime ? "load (realtime)" : "load (capacity)", *load);
  if (latency) {
    print_engine_phase(o.latency_streams > 0 || !load
                           ? "latency"
                           : fmt::format("latency at {:.0f} % of capacity", o.latency_load * 100.0).c_str(),
                       *latency);
  }
  if (baseline) {
    const BaselineResult& b = *baseline;
    fmt::print("\nbaseline (a session per stream, one Run per frame): {} streams on {} threads, {:.1f} s measured\n",
               b.num_streams, b.num_threads, b.measured_s);
    fmt::print("  frames/s            {:>10.0f}\n", b.frames_per_s);
    fmt::print("  streams per core    {:>10.1f}\n", b.streams_per_core);
    fmt::print("  one Run (batch 1)   p50 {:.1f} us  p99 {:.1f} us\n", b.run.p50_us(), b.run.p99_us());
    fmt::print("  CPU                 {:>10.2f}   cores busy; other processes {:.2f}{}\n", b.process_cpu_cores,
               b.other_cpu_cores, noise_note(b.other_cpu_cores));
    if (b.rss_per_stream_kib) fmt::print("  RSS per stream      {:>10.1f}   KiB (its own session)\n", *b.rss_per_stream_kib);
  }
  if (!tts.is_null()) print_tts(tts);
  fmt::print("\nsummary\n");
  if (streams_per_core) {
    fmt::print("  streams per core    {:.1f}", *streams_per_core);
    if (speedup) fmt::print(" vs {:.1f} baseline: {:.2f}x", *baseline_per_core, *speedup);
    fmt::print("\n");
  }
  if (paced) {
    fmt::print("  added latency       p50 {:.2f} ms, p99 {:.2f} ms, p99.9 {:.2f} ms ({} streams, {})\n",
               ms(paced->added_latency.p50_us()), ms(paced->added_latency.p99_us()), ms(paced->added_latency.p999_us()),
               paced->num_streams, paced->kept_up ? "kept up" : "did NOT keep up");
  }
  if (!tts.is_null()) {
    const Json& c = tts["concurrent"];
    fmt::print("  tts first audio     p50 {:.0f} ms, p99 {:.0f} ms ({} clients; alone p50 {:.0f} ms); {:.1f}x real time "
               "per core\n",
               c["first_audio_ms"]["p50"].get<double>(), c["first_audio_ms"]["p99"].get<double>(),
               c["clients"].get<int>(), tts["alone"]["first_audio_ms"]["p50"].get<double>(),
               c["x_realtime_per_core"].get<double>());
  }
  if (first_engine && first_engine->rss_per_stream_kib) {
    fmt::print("  RSS per stream      {:.1f} KiB", *first_engine->rss_per_stream_kib);
    if (baseline && baseline->rss_per_stream_kib) fmt::print(" vs {:.1f} KiB baseline", *baseline->rss_per_stream_kib);
    fmt::print("\n");
  }
  return 0;
}

}  // namespace brisvox::bench
