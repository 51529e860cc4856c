// `brisvox vad FILE...`: speech segments of audio files.
#include <fmt/format.h>

#include <cstdio>
#include <algorithm>
#include <memory>

#include "brisvox/engine/engine.h"
#include "brisvox/engine/offline.h"
#include "brisvox/error.h"
#include "brisvox/formats/segment_writers.h"
#include "brisvox/models/vad/segmenter_params.h"
#include "cli/commands.h"
#include "cli/file_run.h"
#include "cli/vad_params.h"

namespace brisvox::cli {
namespace {

struct VadCommandOptions {
  FileOptions files;
  std::string format = "json";
  bool frame_probs = false;
  std::string model = "v6";
  int model_rate_hz = 0;  // 0: 16000 (8 kHz input upsampled); 8000 runs the 8 kHz model
  SegmenterParams params;
  int workers = 0;
};


int run_vad(const VadCommandOptions& o) {
  const SegmentFormat format = parse_segment_format(o.format);
  o.params.validate();
  check_model_rate(o.model_rate_hz);
  OfflineOptions run_options;
  apply_file_options(o.files, run_options);
  check_workers("--workers", o.workers);
  run_options.stream.vad.params = o.params;
  run_options.stream.vad.model_rate_hz = o.model_rate_hz;
  run_options.stream.vad.emit_probabilities = o.frame_probs;
  if (o.frame_probs && format != SegmentFormat::kJson) {
    throw Error(ErrorCode::kInvalidArgument, "--frame-probs needs --format json (the other formats have no place for them)");
  }

  EngineConfig engine_config;
  engine_config.models = {ModelSpec::silero_vad(o.model)};
  engine_config.models[0].num_workers = o.workers;
  // Files are fed as fast as the workers go: latency does not matter, full batches do.
  engine_config.admission_control = false;
  const auto loading = std::chrono::steady_clock::now();
  Engine engine(engine_config);  // the model is loaded before any file: a bad model fails once
  const ModelSpec& vad = engine.config().model("vad");
  // Enough files in flight to fill every batch; each holds an open descriptor while it is read,
  // so at most 512 (under the usual soft limit of 1024 descriptors).
  run_options.max_open = std::min<std::size_t>(static_cast<std::size_t>(vad.num_workers * vad.max_batch), 512);

  const bool channel_column = run_options.split_channels || run_options.channel >= 0;
  ResultWriter writer;
  writer.extension = file_extension(format);
  writer.header = [format, channel_column](std::FILE* out) { write_header(out, format, channel_column); };
  writer.write = [&](std::FILE* out, const OfflineResult& r) {
    write_segments(out, format, r, o.frame_probs, channel_column);
  };
  return run_files("vad", engine, o.files, run_options, writer, seconds_since(loading));
}

}  // namespace

Command add_vad_command(CLI::App& app) {
  auto o = std::make_shared<VadCommandOptions>();
  app.footer(
      "Output (json): one object per file per line,\n"
      "  {\"file\":..., \"sample_rate\":<input rate>, \"duration\":s, \"segments\":[{\"start\":s,\"end\":s},...]}\n"
      "The segmenter is silero-vad's get_speech_timestamps (6.2.1), same defaults.\n"
      "Examples:\n"
      "  brisvox vad a.wav b.flac\n"
      "  brisvox vad --format audacity -o labels/ *.wav\n"
      "  brisvox vad --threshold 0.6 --min-silence-ms 300 --max-speech-s 15 call.wav\n"
      "  brisvox vad --channels split --format rttm call.wav     (a stereo call: one stream per channel)\n"
      "  sox long.mp3 -t wav - | brisvox vad -\n"
      "  brisvox vad --raw-encoding mulaw call.ul                 (G.711: 8000 Hz unless --raw-rate)\n");
  add_file_options(app, o->files,
                   "Audio files: WAV, RF64, FLAC, Ogg, MP3, AIFF, AU (any rate, channels mixed unless --channels "
                   "split), or headerless PCM/G.711");
  app.add_option("--format", o->format, "json, csv, rttm or audacity")->capture_default_str();
  app.add_flag("--frame-probs", o->frame_probs, "Add the speech probability of every model chunk (json)");
  app.add_option("--model", o->model, "v5, v6 (bundled, batched rewrite), v5-exported, v6-exported (as published) or the path of a Silero VAD .onnx")->capture_default_str();
  add_model_rate_option(app, o->model_rate_hz);
  app.add_option("--workers", o->workers, "Inference threads (default: one per core)");
  add_vad_params(app, o->params);
  return [o] { return run_vad(*o); };
}

}  // namespace brisvox::cli
