// `brisvox transcribe FILE...`: speech-to-text (Whisper) of audio files, segment by segment as the
// VAD cuts them. Files run as concurrent streams of one engine, like `brisvox vad`.
#include <fmt/format.h>

#include <cstdio>

#include "brisvox/engine/engine.h"
#include "brisvox/engine/offline.h"
#include "brisvox/error.h"
#include "brisvox/formats/transcript_writers.h"
#include "cli/commands.h"
#include "cli/file_run.h"
#include "cli/vad_params.h"

namespace brisvox::cli {
namespace {

struct TranscribeOptions {
  FileOptions files;
  std::string model = "tiny.en";
  std::string format = "json";
  std::string language;
  std::string window = "full";
  std::string language_detection = "first";
  std::string vad_model = "v6";
  SegmenterParams vad;
  int model_rate_hz = 0;
  int workers = 0;
  int stt_workers = 1;
  int stt_threads = 1;
};

int run_transcribe(const TranscribeOptions& o) {
  const TranscriptFormat format = parse_transcript_format(o.format);
  if (o.window != "full" && o.window != "fit") {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--window must be full or fit, got '{}'", o.window));
  }
  if (is_subtitles(format) && o.files.files.size() > 1 && o.files.output_dir.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--format {} writes one file's subtitles: give one file, not {}, or -o DIR", o.format,
                            o.files.files.size()));
  }
  if (is_subtitles(format) && o.files.channels == "split") {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--format {} holds one track of subtitles: use --channel N instead of --channels split",
                            o.format));
  }
  OfflineOptions run_options;
  apply_file_options(o.files, run_options);
  check_workers("--workers", o.workers);
  check_workers("--stt-workers", o.stt_workers);
  check_workers("--stt-threads", o.stt_threads);
  check_model_rate(o.model_rate_hz);
  EngineConfig ec;
  ec.models = {ModelSpec::silero_vad(o.vad_model), ModelSpec::whisper(o.model)};
  ec.models[0].num_workers = o.workers;
  ec.models[1].num_workers = o.stt_workers;
  ec.models[1].session.intra_op_threads = o.stt_threads;
  ec.admission_control = false;
  const auto loading = std::chrono::steady_clock::now();
  Engine engine(ec);  // the models are loaded before any file: a bad model fails once
  const double load_s = seconds_since(loading);
  run_options.stream.vad.model_rate_hz = o.model_rate_hz;
  run_options.stream.vad.params = o.vad;
  run_options.stream.stt = SttOptions{};
  run_options.stream.stt->window = o.window == "fit" ? WhisperWindow::kFit : WhisperWindow::kFull;
  run_options.stream.stt->decode.language = o.language;
  run_options.stream.stt->language_detection = *parse_language_detection(o.language_detection);
  // Each file in flight keeps 30 s of history; the Whisper slots are the bottleneck anyway.
  run_options.max_open = static_cast<std::size_t>(engine.config().model("stt").max_pending) + 2;
  ResultWriter writer;
  writer.extension = file_extension(format);
  writer.write = [format](std::FILE* out, const OfflineResult& r) { write_transcript(out, format, r); };
  return run_files("transcribe", engine, o.files, run_options, writer, load_s);
}

}  // namespace

Command add_transcribe_command(CLI::App& app) {
  auto o = std::make_shared<TranscribeOptions>();
  app.footer(
      "Output (json): one object per file per line,\n"
      "  {\"file\":..., \"duration\":s, \"text\":\"...\", \"segments\":[{\"start\":s,\"end\":s,\"text\":\"...\"}]}\n"
      "Segments are the VAD's (as `brisvox vad` prints them, at most 30 s each); each is transcribed on its own,\n"
      "as faster-whisper does (greedy, temperature 0, without timestamps). Segments Whisper finds no speech in\n"
      "are left out. txt: the text; srt and vtt: one cue per segment (one file).\n"
      "Examples:\n"
      "  brisvox transcribe call.wav\n"
      "  brisvox transcribe --format srt lecture.flac > lecture.srt\n"
      "  brisvox transcribe --model base interview.wav        (language detected)\n"
      "  brisvox transcribe --model base-int8 --language de interview.wav\n"
      "  brisvox transcribe --raw-encoding mulaw --raw-rate 8000 call.ul");
  add_file_options(app, o->files, "Audio files (any rate; 8 kHz telephony works)");
  app.add_option("--model", o->model,
                 "Whisper model: tiny.en, tiny.en-int8, base or base-int8 (bundled) or a folder in brisvox's, sherpa-onnx's or Optimum's layout")
      ->capture_default_str();
  app.add_option("--format", o->format, "json, txt, srt or vtt")->capture_default_str();
  app.add_option("--language", o->language,
                 "Language code for multilingual models (en, de, ...); default: detected from the speech")
      ->capture_default_str();
  app.add_option("--language-detection", o->language_detection,
                 "Without --language: detect on a file's first segment and keep it (first), or on each segment (each)")
      ->check(CLI::IsMember({"first", "each"}))
      ->capture_default_str();
  app.add_option("--window", o->window,
                 "Encoder window: full (30 s, what Whisper was trained on) or fit (cut to the segment, at least 10 s)")
      ->capture_default_str();
  app.add_option("--vad-model", o->vad_model, "VAD model: v5, v6, v5-exported, v6-exported or a path")
      ->capture_default_str();
  add_model_rate_option(app, o->model_rate_hz);
  add_vad_params(app, o->vad);
  app.add_option("--workers", o->workers, "VAD inference threads (default: one per core)");
  app.add_option("--stt-workers", o->stt_workers, "Whisper threads (they share the model's sessions, ~320 MB)")
      ->capture_default_str();
  app.add_option("--stt-threads", o->stt_threads, "ONNX Runtime intra-op threads per Whisper run")->capture_default_str();
  return [o] { return run_transcribe(*o); };
}

}  // namespace brisvox::cli
