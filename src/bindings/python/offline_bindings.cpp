// Whole recordings and single clips: _vad_file and _transcribe_file (what `brisvox vad` and
// `brisvox transcribe` print with --format json, by the same runner and the same writers) and smart_turn_probability (one turn through the engine's
// Smart Turn preprocessing and model, as tests/turn compares with Pipecat).
#include <fmt/format.h>
#include <nanobind/stl/string.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bindings.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/engine/offline.h"
#include "brisvox/formats/result_json.h"
#include "brisvox/error.h"
#include "brisvox/models/model_paths.h"
#include "brisvox/models/turn/smart_turn.h"
#include "brisvox/models/turn/turn_features.h"
#include "samples.h"
#include "stream_options.h"

namespace brisvox::python {
namespace {

// One Smart Turn session and its feature buffers (~2.6 MB) per model file, made on first use. The
// calls of a process take turns on it (a mutex): Smart Turn runs ~50 ms per clip on one thread.
// Many streams of an Engine with turn_model instead share its turn workers (batched).
struct TurnScorer {
  std::mutex mutex;
  SmartTurn model;
  TurnFeatures features;
  std::vector<float> input = std::vector<float>(kTurnFeatureValues);
  explicit TurnScorer(const std::string& path) : model(SmartTurnConfig{path, 1, {}}) {}
};

TurnScorer& scorer_for(const std::string& path) {
  static std::mutex mutex;
  // Never destroyed: its sessions would otherwise outlive ONNX Runtime's globals at exit.
  static auto* scorers = new std::map<std::string, std::unique_ptr<TurnScorer>>();
  std::lock_guard lock(mutex);
  auto& slot = (*scorers)[path];
  if (!slot) slot = std::make_unique<TurnScorer>(path);
  return *slot;
}

float smart_turn_probability(nb::handle object, int sample_rate, const std::string& model) {
  Samples samples(object, "smart_turn_probability");
  if (samples.size() == 0) {
    throw Error(ErrorCode::kBadAudio, "smart_turn_probability: no samples (a turn needs audio)");
  }
  nb::gil_scoped_release nogil;
  const std::string path = resolve_turn_model(model);
  std::vector<float> resampled;
  std::span<const float> audio = samples.floats();
  if (sample_rate != kTurnSampleRateHz) {
    if (sample_rate < 1 || sample_rate > Resampler::kMaxRateHz) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("smart_turn_probability: sample_rate is {}, expected 1 to {} Hz (16000 is the "
                              "model's rate; others are resampled)",
                              sample_rate, Resampler::kMaxRateHz));
    }
    resampled = resample(audio, sample_rate, kTurnSampleRateHz);
    audio = resampled;
  }
  TurnScorer& scorer = scorer_for(path);
  std::lock_guard lock(scorer.mutex);
  scorer.features.compute(audio, scorer.input);  // Error(kBadAudio) for NaN/Inf
  const float* features[] = {scorer.input.data()};
  float probability = 0.0f;
  scorer.model.run(features, std::span(&probability, 1));
  return probability;
}

std::string vad_file(nb::handle py_engine, const std::string& path, const nb::kwargs& kwargs) {
  StreamOptions o = parse_stream_options(kwargs, "vad");
  if (kwargs.contains("sample_rate")) {
    throw nb::type_error("vad: sample_rate is the file's; it is not an option here (model_rate is)");
  }
  for (const char* stt : {"transcripts", "language", "language_detection", "window", "prompt", "hotwords", "decoding",
                          "beam_size", "best_of", "temperatures", "word_timestamps", "partial_ms"}) {
    if (kwargs.contains(stt)) {
      throw nb::type_error(fmt::format("vad: {} is not an option here (the document has no transcripts: open a "
                                       "stream with transcripts=True on an Engine with an stt_model)",
                                       stt)
                               .c_str());
    }
  }
  Engine& engine = engine_of(py_engine);
  nb::gil_scoped_release nogil;
  OfflineOptions offline;
  offline.stream = o.config;
  if (offline.stream.turn) offline.stream.turn->wait_for_verdict = true;
  std::vector<ResultPart> parts{ResultPart::kSegments};
  if (o.emit_probabilities) parts.push_back(ResultPart::kFrameProbs);
  if (o.turn) parts.push_back(ResultPart::kTurns);
  const OfflineResult result = run_offline(engine, OfflineInput{path, std::nullopt}, offline);
  if (result.error) throw *result.error;
  return result_json(result, parts);
}

std::string transcribe_file(nb::handle py_engine, const std::string& path, const nb::kwargs& kwargs) {
  for (const char* fixed : {"sample_rate", "transcripts", "turn", "emit_probabilities", "partial_ms"}) {
    if (kwargs.contains(fixed)) {
      throw nb::type_error(fmt::format("transcribe: {} is not an option here (the document is the file's "
                                       "transcripts: the file's sample rate, every segment transcribed)",
                                       fixed)
                               .c_str());
    }
  }
  nb::kwargs with_transcripts;
  for (auto [key, value] : kwargs) with_transcripts[key] = value;
  with_transcripts["transcripts"] = true;
  StreamOptions o = parse_stream_options(with_transcripts, "transcribe");
  Engine& engine = engine_of(py_engine);
  if (engine.config().find_model("stt") == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "transcribe: the engine has no speech-to-text model (Engine(stt_model='tiny.en' or a "
                "converted Whisper folder))");
  }
  nb::gil_scoped_release nogil;
  OfflineOptions offline;
  offline.stream = o.config;
  const OfflineResult result = run_offline(engine, OfflineInput{path, std::nullopt}, offline);
  if (result.error) throw *result.error;
  return transcript_json(result);
}

}  // namespace

void bind_offline(nb::module_& m) {
  m.def("smart_turn_probability", &smart_turn_probability, nb::arg("samples"), nb::arg("sample_rate") = 16000,
        nb::arg("model") = "v3.2",
        "The probability (0..1) that the speaker finished the turn in `samples` (1-D float32 or int16, "
        "mono, the turn's audio up to now; the last 8 s are used), by Smart Turn: brisvox's "
        "preprocessing and model, equal to Pipecat's LocalSmartTurnAnalyzerV3 within 1e-4 at 16 kHz. "
        "Other rates are resampled to 16 kHz. model: 'v3.2' (bundled) or a Smart Turn v3.x .onnx path.");
  m.def("_vad_file", &vad_file, nb::arg("engine"), nb::arg("path"), nb::arg("kwargs"),
        "The JSON document `brisvox vad --format json` prints for one file (brisvox.vad parses it).");
  m.def("_transcribe_file", &transcribe_file, nb::arg("engine"), nb::arg("path"), nb::arg("kwargs"),
        "The JSON document `brisvox transcribe --format json` prints for one file (brisvox.transcribe "
        "parses it).");
}

}  // namespace brisvox::python
