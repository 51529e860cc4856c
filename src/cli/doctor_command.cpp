// `brisvox doctor`: what ONNX Runtime brisvox runs on and what it costs, measured on this machine.
// Answers the questions a deployment needs settled (docs/ONNXRUNTIME.md): the runtime version,
// whether the bundled models load (opset), whether the build uses OpenMP (which would ignore
// intra-op thread settings), how many threads a session adds, and what one Run costs.
#include <fmt/format.h>

#include <link.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "brisvox/error.h"
#include "brisvox/latency_histogram.h"
#include "brisvox/models/model_paths.h"
#include "brisvox/models/stt/whisper_model.h"
#include "brisvox/models/tts/piper_tts.h"
#include "brisvox/models/tts/piper_voices.h"
#include "brisvox/models/turn/smart_turn.h"
#include "brisvox/models/turn/turn_features.h"
#include "brisvox/models/vad/silero_vad.h"
#include "brisvox/runtime/runtime_info.h"
#include "cli/commands.h"

namespace brisvox::cli {
namespace {

using Json = nlohmann::ordered_json;

// The shared libraries libonnxruntime.so was linked against (its DT_NEEDED entries), read from
// the loaded image. An OpenMP build of ORT needs libgomp/libiomp/libomp, and then ignores
// intra_op_threads (OMP_NUM_THREADS rules instead). Other libraries (libsoxr) may load libgomp
// too, so the process's maps alone would not tell.
std::vector<std::string> ort_needed_libraries() {
  std::vector<std::string> needed;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "libonnxruntime.so") == nullptr) return 0;
        auto* out = static_cast<std::vector<std::string>*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
          const auto* dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
          const char* strtab = nullptr;
          for (const auto* d = dyn; d->d_tag != DT_NULL; ++d) {
            if (d->d_tag == DT_STRTAB) strtab = reinterpret_cast<const char*>(d->d_un.d_ptr);
          }
          if (strtab == nullptr) return 1;
          for (const auto* d = dyn; d->d_tag != DT_NULL; ++d) {
            if (d->d_tag == DT_NEEDED) out->emplace_back(strtab + d->d_un.d_val);
          }
        }
        return 1;
      },
      &needed);
  return needed;
}

bool is_openmp_library(const std::string& name) {
  return name.find("gomp") != std::string::npos || name.find("iomp") != std::string::npos ||
         name.rfind("libomp", 0) == 0;
}

Json describe_tensors(const std::vector<TensorInfo>& tensors) {
  Json out = Json::array();
  for (const auto& t : tensors) {
    out.push_back({{"name", t.name}, {"type", element_type_name(t.type)}, {"shape", t.shape_string()}});
  }
  return out;
}

// Threads a session adds at creation and after its first Run, and the median/p99 Run time at
// batch 1, for one intra-op thread setting.
Json measure_session(const std::string& path, int intra_op_threads, int runs) {
  SileroConfig config;
  config.model_path = path;
  config.max_batch = 1;
  config.session.intra_op_threads = intra_op_threads;
  const int before = process_thread_count();
  SileroVad vad(config);
  const int after_create = process_thread_count();
  SileroStreamState state;
  SileroStreamState* state_ptr = &state;
  std::vector<float> chunk(static_cast<std::size_t>(silero_chunk_samples(16000)));
  for (std::size_t i = 0; i < chunk.size(); ++i) chunk[i] = 0.1f * static_cast<float>((i % 17) - 8) / 8.0f;
  const float* chunk_ptr = chunk.data();
  float prob = 0;
  for (int i = 0; i < 20; ++i) vad.run(16000, std::span(&state_ptr, 1), std::span(&chunk_ptr, 1), std::span(&prob, 1));
  const int after_run = process_thread_count();
  std::vector<double> us;
  us.reserve(static_cast<std::size_t>(runs));
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    vad.run(16000, std::span(&state_ptr, 1), std::span(&chunk_ptr, 1), std::span(&prob, 1));
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return {{"intra_op_threads", intra_op_threads},
          {"threads_added_by_session", after_create - before},
          {"threads_added_after_first_runs", after_run - before},
          {"run_us_p50", us[us.size() / 2]},
          {"run_us_p99", us[us.size() * 99 / 100]},
          {"runs", runs}};
}

Json describe_model(const ModelInfo& info) {
  Json m;
  m["opset"] = info.default_opset();
  m["ir_version"] = info.ir_version;
  m["producer"] = info.producer_version.empty() ? info.producer_name
                                                : fmt::format("{} {}", info.producer_name, info.producer_version);
  m["inputs"] = describe_tensors(info.inputs);
  m["outputs"] = describe_tensors(info.outputs);
  return m;
}

// A bundled Smart Turn model: does it load, its contract, and what one analysis (features + model,
// one intra-op thread, as the engine's turn worker runs it) costs. A few analyses only: each is
// tens of milliseconds.
Json check_turn_model(std::string_view alias) {
  Json m;
  m["model"] = alias;
  try {
    const std::string path = resolve_turn_model(alias);
    m["path"] = path;
    SmartTurnConfig config;
    config.model_path = path;
    config.max_batch = 1;
    const int before = process_thread_count();
    SmartTurn model(config);
    m["loads"] = true;
    m.update(describe_model(model.model_info()));
    // 6 s of a synthetic vowel-like signal; the cost does not depend on the content.
    std::vector<float> audio(6 * kTurnSampleRateHz);
    for (std::size_t i = 0; i < audio.size(); ++i) {
      audio[i] = 0.1f * static_cast<float>(std::sin(0.0785 * static_cast<double>(i)) * std::sin(2e-4 * static_cast<double>(i)));
    }
    TurnFeatures features;
    std::vector<float> f(kTurnFeatureValues);
    LatencyHistogram analysis;
    constexpr int kRuns = 6;
    float p = 0;
    for (int i = -1; i < kRuns; ++i) {  // one warm-up
      const auto t0 = std::chrono::steady_clock::now();
      features.compute(audio, f);
      const float* fp = f.data();
      model.run(std::span(&fp, 1), std::span(&p, 1));
      if (i >= 0) analysis.record(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    m["threads_added"] = process_thread_count() - before;
    m["analysis_ms_p50"] = analysis.p50_us() / 1000.0;
    m["analyses"] = kRuns;
  } catch (const Error& e) {
    m["loads"] = false;
    m["error"] = e.what();
  }
  return m;
}

// A bundled Whisper model: is it there, does it load, what it is. Not timed (loading is seconds).
// Absent is not a failure (tiny.en alone serves every default); present and broken is.
Json check_stt_model(std::string_view alias, bool& ok) {
  Json m;
  m["model"] = alias;
  std::string path;
  try {
    path = resolve_stt_model(alias);
  } catch (const Error& e) {
    m["present"] = false;
    m["loads"] = false;
    m["error"] = e.what();
    return m;
  }
  m["present"] = true;
  m["path"] = path;
  try {
    const WhisperModel model = WhisperModel::load(path);
    const WhisperConfig& c = model.config();
    m["loads"] = true;
    m["layout"] = to_string(model.layout());
    m["multilingual"] = c.multilingual;
    m["languages"] = c.multilingual ? static_cast<int>(c.languages.size()) : 1;
    m["layers"] = c.dims.n_text_layer;
    m["width"] = c.dims.n_text_state;
    m["vocabulary"] = c.dims.n_vocab;
  } catch (const Error& e) {
    m["loads"] = false;
    m["error"] = e.what();
    ok = false;
  }
  return m;
}

// An installed Piper voice: does it load (model, config, espeak-ng), which file runs, and what a
// short reply costs to its first audio (one sentence, one intra-op thread, as a TTS worker runs
// it). No voice installed is not a failure (speech is optional); a voice that does not load is.
Json check_voice(const InstalledVoice& v, bool& ok) {
  Json m;
  m["voice"] = v.name;
  m["path"] = v.model_path;
  try {
    if (!v.problem.empty()) throw Error(ErrorCode::kBadModel, v.problem);
    PiperTtsConfig config;
    config.model_path = v.model_path;
    PiperTts tts(config);
    m["loads"] = true;
    m["runs_file"] = tts.model().model_info().source;
    m["sample_rate"] = tts.voice().sample_rate_hz;
    m["language"] = tts.voice().espeak_voice;
    m["espeak_ng"] = config.espeak.executable;
    PiperRequest reply;
    reply.text = "Sure, I can help with that.";
    LatencyHistogram first_audio;
    constexpr int kRuns = 3;
    for (int i = -1; i < kRuns; ++i) {  // one warm-up
      const auto t0 = std::chrono::steady_clock::now();
      PiperSynthesis synthesis = tts.start(reply);
      PiperChunk chunk;
      if (!tts.next(synthesis, chunk) || chunk.samples.empty()) throw Error(ErrorCode::kRuntime, "the voice gave no audio");
      if (i >= 0) first_audio.record(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    m["first_audio_ms_p50"] = first_audio.p50_us() / 1000.0;
    m["syntheses"] = kRuns;
  } catch (const Error& e) {
    m["loads"] = false;
    m["error"] = e.what();
    ok = false;
  }
  return m;
}

int run_doctor(bool as_json, int runs) {
  Json report;
  report["brisvox_version"] = BRISVOX_VERSION;
  report["onnxruntime_version"] = ort_version();
  report["onnxruntime_build"] = ort_build_info();
  report["available_providers"] = ort_available_providers();
  const auto needed = ort_needed_libraries();
  const bool openmp = std::any_of(needed.begin(), needed.end(), is_openmp_library);
  report["onnxruntime_needed_libraries"] = needed;
  report["onnxruntime_openmp_build"] = openmp;
  report["models_dir"] = models_dir();
  const int threads_at_start = process_thread_count();
  ort_initialize();
  report["process_threads_at_start"] = threads_at_start;
  report["threads_added_by_ort_environment"] = process_thread_count() - threads_at_start;
  Json models = Json::array();
  bool all_ok = true;
  for (const char* alias : {"v5", "v6", "v5-exported", "v6-exported"}) {
    Json m;
    m["model"] = alias;
    try {
      const std::string path = resolve_vad_model(alias);
      m["path"] = path;
      SileroConfig config;
      config.model_path = path;
      config.max_batch = 1;
      SileroVad vad(config);
      const ModelInfo& info = vad.model_info();
      m["loads"] = true;
      m.update(describe_model(info));
      Json threads = Json::array();
      // The default (1) and ORT's own default (0 = one per physical core), to show the difference.
      for (int intra : {1, 0}) threads.push_back(measure_session(path, intra, runs));
      m["sessions"] = threads;
    } catch (const Error& e) {
      m["loads"] = false;
      m["error"] = e.what();
      all_ok = false;
    }
    models.push_back(m);
  }
  report["models"] = models;
  Json turn_models = Json::array();
  for (std::string_view alias : kBundledTurnModels) {
    turn_models.push_back(check_turn_model(alias));
    all_ok = all_ok && turn_models.back()["loads"].get<bool>();
  }
  report["turn_models"] = turn_models;
  Json stt_models = Json::array();
  for (std::string_view alias : kBundledSttModels) {
    stt_models.push_back(check_stt_model(alias, all_ok));
  }
  report["stt_models"] = stt_models;
  Json voices = Json::array();
  for (const InstalledVoice& v : list_piper_voices()) voices.push_back(check_voice(v, all_ok));
  report["voices_dir"] = piper_voices_dir();
  report["voices"] = voices;
  if (as_json) {
    fmt::print("{}\n", report.dump(2));
    return all_ok ? kExitOk : kExitInputFailed;
  }
  fmt::print("brisvox {}\n", report["brisvox_version"].get<std::string>());
  fmt::print("ONNX Runtime {} ({})\n", ort_version(), ort_build_info());
  fmt::print("  providers: {}\n", fmt::join(ort_available_providers(), ", "));
  fmt::print("  links: {}\n", fmt::join(needed, ", "));
  fmt::print("  OpenMP build: {}\n", openmp ? "yes: intra_op_threads is ignored, set OMP_NUM_THREADS"
                                            : "no: intra_op_threads governs ORT's own thread pool");
  fmt::print("  threads: {} at start, +{} when the ONNX Runtime environment is created (once per process)\n",
             threads_at_start, report["threads_added_by_ort_environment"].get<int>());
  fmt::print("models folder: {}\n", models_dir());
  for (const auto& m : models) {
    fmt::print("\nSilero VAD {}: ", m["model"].get<std::string>());
    if (!m["loads"].get<bool>()) {
      fmt::print("FAILED: {}\n", m["error"].get<std::string>());
      continue;
    }
    fmt::print("{}\n  opset {}, IR {}, producer '{}'\n", m["path"].get<std::string>(),
               m["opset"].get<int64_t>(), m["ir_version"].get<int64_t>(), m["producer"].get<std::string>());
    for (const char* role : {"inputs", "outputs"}) {
      for (const auto& t : m[role]) {
        fmt::print("  {:7} {:8} {:8} {}\n", role == std::string("inputs") ? "input" : "output",
                   t["name"].get<std::string>(), t["type"].get<std::string>(), t["shape"].get<std::string>());
      }
    }
    for (const auto& s : m["sessions"]) {
      const int intra = s["intra_op_threads"].get<int>();
      fmt::print("  intra_op_threads={}{}: +{} threads at creation, +{} after first runs; Run at batch 1: "
                 "p50 {:.1f} us, p99 {:.1f} us ({} runs)\n",
                 intra, intra == 0 ? " (ORT default)" : "", s["threads_added_by_session"].get<int>(),
                 s["threads_added_after_first_runs"].get<int>(), s["run_us_p50"].get<double>(),
                 s["run_us_p99"].get<double>(), s["runs"].get<int>());
    }
  }
  for (const auto& m : turn_models) {
    fmt::print("\nSmart Turn {}: ", m["model"].get<std::string>());
    if (!m["loads"].get<bool>()) {
      fmt::print("FAILED: {}\n", m["error"].get<std::string>());
      continue;
    }
    fmt::print("{}\n  opset {}, IR {}, producer '{}'\n", m["path"].get<std::string>(), m["opset"].get<int64_t>(),
               m["ir_version"].get<int64_t>(), m["producer"].get<std::string>());
    for (const char* role : {"inputs", "outputs"}) {
      for (const auto& t : m[role]) {
        fmt::print("  {:7} {:14} {:8} {}\n", role == std::string("inputs") ? "input" : "output",
                   t["name"].get<std::string>(), t["type"].get<std::string>(), t["shape"].get<std::string>());
      }
    }
    fmt::print("  one analysis (features + model, 1 thread): p50 {:.1f} ms ({} analyses), +{} threads\n",
               m["analysis_ms_p50"].get<double>(), m["analyses"].get<int>(), m["threads_added"].get<int>());
  }
  for (const auto& m : stt_models) {
    fmt::print("\nWhisper {}: ", m["model"].get<std::string>());
    if (!m["loads"].get<bool>()) {
      fmt::print("{}: {}\n", m["present"].get<bool>() ? "FAILED" : "not installed", m["error"].get<std::string>());
      continue;
    }
    fmt::print("{}\n  {} layout, {} decoder layers of width {}, {}\n", m["path"].get<std::string>(),
               m["layout"].get<std::string>(), m["layers"].get<int>(), m["width"].get<int>(),
               m["multilingual"].get<bool>() ? fmt::format("multilingual ({} languages, detected unless given)",
                                                           m["languages"].get<int>())
                                             : std::string("English only"));
  }
  if (voices.empty()) fmt::print("\nPiper voices: none in {} (scripts/setup.sh installs en_US-joe-medium)\n", piper_voices_dir());
  for (const auto& m : voices) {
    fmt::print("\nPiper voice {}: ", m["voice"].get<std::string>());
    if (!m["loads"].get<bool>()) {
      fmt::print("FAILED: {}\n", m["error"].get<std::string>());
      continue;
    }
    fmt::print("{}\n  runs {}, {} Hz, espeak-ng voice '{}' ({})\n"
               "  first audio of a short reply (1 thread): p50 {:.1f} ms ({} syntheses)\n",
               m["path"].get<std::string>(), m["runs_file"].get<std::string>(), m["sample_rate"].get<int>(),
               m["language"].get<std::string>(), m["espeak_ng"].get<std::string>(),
               m["first_audio_ms_p50"].get<double>(), m["syntheses"].get<int>());
  }
  return all_ok ? kExitOk : kExitInputFailed;
}

}  // namespace

Command add_doctor_command(CLI::App& app) {
  auto as_json = std::make_shared<bool>(false);
  auto runs = std::make_shared<int>(500);
  // Its own footer: a subcommand without one shows the global examples (CLI11 inherits it).
  app.footer(
      "Checks ONNX Runtime (version, providers), finds and loads every bundled model, and times each session\n"
      "setting; exit status 1 if anything is missing or fails.\n"
      "Examples:\n"
      "  brisvox doctor\n"
      "  brisvox doctor --json | jq .models");
  app.add_flag("--json", *as_json, "Print the report as JSON");
  app.add_option("--runs", *runs, "Timed runs per session setting")->capture_default_str()->check(CLI::Range(10, 1000000));
  return [as_json, runs] { return run_doctor(*as_json, *runs); };
}

}  // namespace brisvox::cli
