// `brisvox vad FILE...`: speech segments of audio files.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "brisvox/engine/engine.h"
#include "brisvox/engine/offline.h"
#include "brisvox/error.h"
#include "brisvox/models/vad/segmenter_params.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"
#include "cli/segment_writers.h"

namespace brisvox::cli {
namespace {

struct VadOptions {
  std::vector<std::string> files;
  std::string format = "json";
  bool frame_probs = false;
  std::string model = "v6";
  int model_rate_hz = 0;  // 0: 8000 for 8 kHz input, else 16000
  std::string output_dir;
  std::string raw_encoding;
  int raw_rate_hz = 0;
  SegmenterParams params;
  bool no_progress = false;
  int workers = 0;
};


int run_vad(const VadOptions& o) {
  const SegmentFormat format = parse_segment_format(o.format);
  o.params.validate();
  if (o.model_rate_hz != 0 && o.model_rate_hz != 8000 && o.model_rate_hz != 16000) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--model-rate must be 8000 or 16000, got {}", o.model_rate_hz));
  }
  OfflineOptions run_options;
  if (!o.raw_encoding.empty()) run_options.read.raw_encoding = parse_encoding(o.raw_encoding);
  run_options.read.raw_sample_rate_hz = o.raw_rate_hz;
  run_options.stream.vad.params = o.params;
  run_options.stream.vad.model_rate_hz = o.model_rate_hz;
  run_options.stream.vad.emit_probabilities = o.frame_probs;

  EngineConfig engine_config;
  engine_config.models = {ModelSpec::silero_vad(o.model)};
  engine_config.models[0].num_workers = o.workers;
  // Files are fed as fast as the workers go: latency does not matter, full batches do.
  engine_config.admission_control = false;
  Engine engine(engine_config);  // the model is loaded before any file: a bad model fails once
  const ModelSpec& vad = engine.config().model("vad");
  run_options.max_open = static_cast<std::size_t>(vad.num_workers * vad.max_batch);

  if (o.frame_probs && format != SegmentFormat::kJson) {
    throw Error(ErrorCode::kInvalidArgument, "--frame-probs needs --format json (the other formats have no place for them)");
  }
  if (!o.output_dir.empty()) {
    // Two inputs with the same stem would write the same output file: refuse before any work.
    std::map<std::string, std::string> by_output;
    for (const auto& file : o.files) {
      const std::string name = std::filesystem::path(file).stem().string() + std::string(file_extension(format));
      const auto [it, fresh] = by_output.emplace(name, file);
      if (!fresh) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("'{}' and '{}' would both be written to '{}' in {}: process them in separate runs",
                                it->second, file, name, o.output_dir));
      }
    }
    std::error_code ec;
    std::filesystem::create_directories(o.output_dir, ec);
    if (ec) throw Error(ErrorCode::kIo, fmt::format("cannot create output folder '{}': {}", o.output_dir, ec.message()));
  }
  if (o.output_dir.empty()) write_header(stdout, format);
  ProgressBar progress(o.files.size(), !o.no_progress && o.files.size() > 1 && isatty(STDERR_FILENO));
  int failures = 0;
  std::vector<OfflineInput> inputs;
  for (const auto& file : o.files) inputs.push_back(OfflineInput{file, std::nullopt});
  run_offline(engine, inputs, run_options, [&](const OfflineResult& r) {
    try {
      if (r.error) throw *r.error;
      if (o.output_dir.empty()) {
        progress.clear();
        write_segments(stdout, format, r, o.frame_probs);
        std::fflush(stdout);
      } else {
        const auto out_path = std::filesystem::path(o.output_dir) /
                              (std::filesystem::path(r.file).stem().string() + std::string(file_extension(format)));
        std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(out_path.c_str(), "w"), &std::fclose);
        if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write '{}'", out_path.string()));
        write_header(out.get(), format);
        write_segments(out.get(), format, r, o.frame_probs);
      }
    } catch (const Error& e) {
      progress.clear();
      std::fprintf(stderr, "brisvox vad: %s: error [%s]: %s\n", r.file.c_str(), std::string(to_string(e.code())).c_str(),
                   e.what());
      ++failures;
    }
    progress.advance();
  });
  progress.finish();
  return failures == 0 ? kExitOk : kExitInputFailed;
}

}  // namespace

Command add_vad_command(CLI::App& app) {
  auto o = std::make_shared<VadOptions>();
  app.footer(
      "Output (json): one object per file per line,\n"
      "  {\"file\":..., \"sample_rate\":<input rate>, \"duration\":s, \"segments\":[{\"start\":s,\"end\":s},...]}\n"
      "The segmenter is silero-vad's get_speech_timestamps (6.2.1), same defaults.\n"
      "Examples:\n"
      "  brisvox vad a.wav b.flac\n"
      "  brisvox vad --format audacity -o labels/ *.wav\n"
      "  brisvox vad --threshold 0.6 --min-silence-ms 300 --max-speech-s 15 call.wav\n");
  app.add_option("files", o->files, "Audio files: WAV, FLAC, OGG (any rate, mixed to mono), or raw PCM")
      ->required();
  app.add_option("--format", o->format, "json, csv, rttm or audacity")->capture_default_str();
  app.add_flag("--frame-probs", o->frame_probs, "Add the speech probability of every model chunk (json)");
  app.add_option("--model", o->model, "v5, v6 (bundled, batched rewrite), v5-exported, v6-exported (as published) or the path of a Silero VAD .onnx")->capture_default_str();
  app.add_option("--model-rate", o->model_rate_hz,
                 "Rate the model runs at, 8000 or 16000 (default: 8000 for 8 kHz input, else 16000)");
  app.add_option("-o,--output-dir", o->output_dir, "Write one file per input here instead of stdout");
  app.add_option("--raw-encoding", o->raw_encoding, "Headerless input: pcm_s16le, pcm_f32le, mulaw or alaw");
  app.add_option("--raw-rate", o->raw_rate_hz, "Sample rate of headerless input");
  app.add_flag("--no-progress", o->no_progress, "No progress bar on stderr");
  app.add_option("--workers", o->workers, "Inference threads (default: one per core)");
  auto& p = o->params;
  app.add_option("--threshold", p.threshold, "Speech probability that starts speech")->capture_default_str();
  app.add_option("--neg-threshold", p.neg_threshold,
                 "Probability below which speech may end (default: max(threshold - 0.15, 0.01))");
  app.add_option("--min-speech-ms", p.min_speech_ms, "Shorter segments are dropped")->capture_default_str();
  app.add_option("--max-speech-s", p.max_speech_s, "Longer segments are split (default: no limit)");
  app.add_option("--min-silence-ms", p.min_silence_ms, "Silence that ends a segment")->capture_default_str();
  app.add_option("--speech-pad-ms", p.speech_pad_ms, "Padding added to each side of a segment")->capture_default_str();
  app.add_option("--min-silence-at-max-speech-ms", p.min_silence_at_max_speech_ms,
                 "Silence that may serve as a split point of an over-long segment")->capture_default_str();
  app.add_option("--use-max-poss-sil-at-max-speech", p.use_max_poss_sil_at_max_speech,
                 "Split an over-long segment at its longest silence (true) or its last (false)")
      ->capture_default_str();
  return [o] { return run_vad(*o); };
}

}  // namespace brisvox::cli
