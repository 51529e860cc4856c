// `brisvox turn FILE...`: voice activity + end-of-turn detection (Smart Turn v3) on files.
#include <fmt/format.h>

#include <cstdio>

#include "brisvox/engine/engine.h"
#include "brisvox/engine/offline.h"
#include "brisvox/error.h"
#include "cli/commands.h"

namespace brisvox::cli {
namespace {

struct TurnOptions {
  std::vector<std::string> files;
  std::string turn_model = "v3.2";
  std::string model = "v6";
  int workers = 0;
  int turn_workers = 1;
  int turn_threads = 1;
  bool with_segments = false;
  SegmenterParams vad;
  TurnParams turn;
};

int run_turn(const TurnOptions& o) {
  o.vad.validate();
  o.turn.validate();
  EngineConfig ec;
  ec.models = {ModelSpec::silero_vad(o.model), ModelSpec::smart_turn(o.turn_model)};
  ec.models[0].num_workers = o.workers;
  ec.models[1].num_workers = o.turn_workers;
  ec.models[1].session.intra_op_threads = o.turn_threads;
  ec.admission_control = false;
  Engine engine(ec);
  OfflineOptions run_options;
  run_options.stream.vad.params = o.vad;
  run_options.stream.turn = TurnStage{};
  run_options.stream.turn->params = o.turn;
  // Each file in flight holds up to 9.5 s of history for turn analyses: keep the count modest.
  run_options.max_open = static_cast<std::size_t>(engine.config().model("vad").num_workers) * 8;
  std::vector<OfflineInput> inputs;
  for (const auto& file : o.files) inputs.push_back(OfflineInput{file, std::nullopt});
  int failures = 0;
  run_offline(engine, inputs, run_options, [&](const OfflineResult& r) {
    if (r.error) {
      std::fprintf(stderr, "brisvox turn: %s: error [%s]: %s\n", r.file.c_str(),
                   std::string(to_string(r.error->code())).c_str(), r.error->what());
      ++failures;
      return;
    }
    fmt::print("{}\n", o.with_segments ? result_json(r, {ResultPart::kTurns, ResultPart::kSegments})
                                       : result_json(r, {ResultPart::kTurns}));
    std::fflush(stdout);
  });
  return failures == 0 ? kExitOk : kExitInputFailed;
}

}  // namespace

Command add_turn_command(CLI::App& app) {
  auto o = std::make_shared<TurnOptions>();
  app.footer(
      "Output: one JSON object per file per line,\n"
      "  {\"file\":..., \"sample_rate\":..., \"duration\":s, \"turns\":[{\"start\":s,\"end\":s,\"probability\":p,\"reason\":r}]}\n"
      "reason: model (Smart Turn said the speaker finished), timeout (max silence), end_of_stream.\n"
      "The default model, v3.2, is Smart Turn v3.2 as Pipecat ships it (scripts/setup.sh installs it).\n"
      "Examples:\n"
      "  brisvox turn call.wav\n"
      "  brisvox turn --turn-model smart-turn-v3.1-cpu.onnx call.wav\n"
      "  brisvox turn --turn-model m.onnx --stop-ms 300 --max-silence-ms 2000 --segments *.wav");
  app.add_option("files", o->files, "Audio files (any rate; 8/16 kHz native for the VAD)")->required();
  app.add_option("--turn-model", o->turn_model, "Smart Turn model: v3.2 (bundled) or a v3.x .onnx file")
      ->capture_default_str();
  app.add_option("--model", o->model, "VAD model: v5, v6, v5-exported, v6-exported or a path")->capture_default_str();
  app.add_option("--workers", o->workers, "VAD inference threads (default: one per core)");
  app.add_option("--turn-workers", o->turn_workers, "Smart Turn threads")->capture_default_str();
  app.add_option("--turn-threads", o->turn_threads, "ONNX Runtime intra-op threads per Smart Turn run")->capture_default_str();
  app.add_flag("--segments", o->with_segments, "Also print the VAD speech segments");
  app.add_option("--stop-ms", o->turn.stop_ms, "Pause that triggers an analysis")->capture_default_str();
  app.add_option("--pre-speech-ms", o->turn.pre_speech_ms, "Audio kept before the turn's first speech")->capture_default_str();
  app.add_option("--max-silence-ms", o->turn.max_silence_ms, "Silence that ends a turn without a verdict")->capture_default_str();
  app.add_option("--turn-threshold", o->turn.turn_threshold, "Probability above which a turn is complete")->capture_default_str();
  app.add_option("--threshold", o->turn.threshold, "Speech probability of a frame (turn tracking)")->capture_default_str();
  return [o] { return run_turn(*o); };
}

}  // namespace brisvox::cli
