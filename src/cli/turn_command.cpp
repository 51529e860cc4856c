// `brisvox turn FILE...`: voice activity + end-of-turn detection (Smart Turn v3) on files. The
// same inputs, channels, output places and VAD parameters as `brisvox vad` (cli/file_run.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/engine/offline.h"
#include "brisvox/error.h"
#include "brisvox/formats/segment_writers.h"
#include "cli/commands.h"
#include "cli/file_run.h"
#include "cli/vad_params.h"

namespace brisvox::cli {
namespace {

struct TurnCommandOptions {
  FileOptions files;
  std::string format = "json";
  std::string turn_model = "v3.2";
  std::string model = "v6";
  int model_rate_hz = 0;
  int workers = 0;
  int turn_workers = 1;
  int turn_threads = 1;
  bool with_segments = false;
  SegmenterParams vad;
  TurnParams turn;
};

int run_turn(const TurnCommandOptions& o) {
  const SegmentFormat format = parse_segment_format(o.format);
  o.vad.validate();
  // One speech decision: --threshold and --neg-threshold are the segmenter's and the turn
  // tracker's alike.
  TurnParams turn = o.turn;
  turn.threshold = o.vad.threshold;
  turn.neg_threshold = o.vad.neg_threshold;
  turn.validate();
  if (o.with_segments && format != SegmentFormat::kJson) {
    throw Error(ErrorCode::kInvalidArgument, "--segments needs --format json (use `brisvox vad` for segments in other formats)");
  }
  OfflineOptions run_options;
  apply_file_options(o.files, run_options);
  check_workers("--workers", o.workers);
  check_workers("--turn-workers", o.turn_workers);
  check_workers("--turn-threads", o.turn_threads);
  check_model_rate(o.model_rate_hz);
  run_options.stream.vad.params = o.vad;
  run_options.stream.vad.model_rate_hz = o.model_rate_hz;
  run_options.stream.turn = brisvox::TurnOptions{};
  run_options.stream.turn->params = turn;
  EngineConfig ec;
  ec.models = {ModelSpec::silero_vad(o.model), ModelSpec::smart_turn(o.turn_model)};
  ec.models[0].num_workers = o.workers;
  ec.models[1].num_workers = o.turn_workers;
  ec.models[1].session.intra_op_threads = o.turn_threads;
  ec.admission_control = false;
  const auto loading = std::chrono::steady_clock::now();
  Engine engine(ec);
  // Each file in flight holds up to 9.5 s of history for turn analyses: keep the count modest.
  run_options.max_open = static_cast<std::size_t>(engine.config().model("vad").num_workers) * 8;
  const bool channel_column = run_options.split_channels || run_options.channel >= 0;
  ResultWriter writer;
  writer.extension = file_extension(format);
  writer.header = [format, channel_column](std::FILE* out) { write_turn_header(out, format, channel_column); };
  writer.write = [&](std::FILE* out, const OfflineResult& r) {
    write_turns(out, format, r, o.with_segments, channel_column);
  };
  return run_files("turn", engine, o.files, run_options, writer, seconds_since(loading));
}

}  // namespace

Command add_turn_command(CLI::App& app) {
  auto o = std::make_shared<TurnCommandOptions>();
  app.footer(
      "Output (json): one object per file (per channel with --channels split) per line,\n"
      "  {\"file\":..., \"sample_rate\":..., \"duration\":s, \"turns\":[{\"start\":s,\"end\":s,\"probability\":p,\"reason\":r}],\n"
      "   \"incomplete\":[{\"start\":s,\"end\":s,\"probability\":p}]}\n"
      "reason: model (Smart Turn said the speaker finished), timeout (max silence), end_of_stream.\n"
      "incomplete: pauses Smart Turn judged unfinished (the turn went on).\n"
      "csv: file,start,end,probability,reason (reason incomplete for those pauses), in time order;\n"
      "rttm: one SPEAKER line per finished turn; audacity: one label per verdict.\n"
      "--threshold/--neg-threshold decide speech for the segmenter and the turn tracker alike.\n"
      "The default model, v3.2, is Smart Turn v3.2 as Pipecat ships it (scripts/setup.sh installs it).\n"
      "Examples:\n"
      "  brisvox turn call.wav\n"
      "  brisvox turn --channels split --format csv -o turns/ calls/*.wav\n"
      "  brisvox turn --turn-model smart-turn-v3.1-cpu.onnx call.wav\n"
      "  brisvox turn --turn-model m.onnx --stop-ms 300 --max-silence-ms 2000 --segments *.wav");
  add_file_options(app, o->files, "Audio files (any rate; 8/16 kHz native for the VAD)");
  app.add_option("--format", o->format, "json, csv, rttm or audacity")->capture_default_str();
  app.add_option("--turn-model", o->turn_model, "Smart Turn model: v3.2 (bundled) or a v3.x .onnx file")
      ->capture_default_str();
  app.add_option("--model", o->model, "VAD model: v5, v6, v5-exported, v6-exported or a path")->capture_default_str();
  add_model_rate_option(app, o->model_rate_hz);
  app.add_option("--workers", o->workers, "VAD inference threads (default: one per core)");
  app.add_option("--turn-workers", o->turn_workers, "Smart Turn threads")->capture_default_str();
  app.add_option("--turn-threads", o->turn_threads, "ONNX Runtime intra-op threads per Smart Turn run")->capture_default_str();
  app.add_flag("--segments", o->with_segments, "Also print the VAD speech segments (json)");
  app.add_option("--stop-ms", o->turn.stop_ms, "Pause that triggers an analysis")->capture_default_str();
  app.add_option("--pre-speech-ms", o->turn.pre_speech_ms, "Audio kept before the turn's first speech")->capture_default_str();
  app.add_option("--max-silence-ms", o->turn.max_silence_ms, "Silence that ends a turn without a verdict")->capture_default_str();
  app.add_option("--turn-threshold", o->turn.turn_threshold, "Probability above which a turn is complete")->capture_default_str();
  add_vad_params(app, o->vad);
  return [o] { return run_turn(*o); };
}

}  // namespace brisvox::cli
