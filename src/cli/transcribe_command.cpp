// `brisvox transcribe FILE...`: speech-to-text (Whisper) of audio files, segment by segment as the
// VAD cuts them. Files run as concurrent streams of one engine, like `brisvox vad`.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

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
  // Multilingual, the language detected: docs/MODELS.md "The default model" (measured).
  std::string model = "base-int8";
  std::string format = "json";
  std::string language;
  std::string window = "full";
  std::string language_detection = "first";
  std::string task = "transcribe";
  std::string decoding = "greedy";
  int beam_size = 0;   // 0: the --decoding's
  int best_of = 0;
  std::string temperatures;  // "": the --decoding's
  std::string prompt;
  std::string hotwords;
  bool word_timestamps = false;
  std::string vad_model = "v6";
  SegmenterParams vad;
  int model_rate_hz = 0;
  int workers = 0;
  int stt_workers = 1;
  int stt_threads = 1;
};

// --decoding, then the options that refine it.
void apply_decoding(const TranscribeOptions& o, SttOptions& stt) {
  if (o.decoding == "faster-whisper") use_faster_whisper_decoding(stt.decode, stt.fallback);
  if (o.beam_size > 0) stt.decode.beam_size = o.beam_size;
  if (o.best_of > 0) stt.decode.best_of = o.best_of;
  if (!o.temperatures.empty()) {
    try {
      stt.fallback.temperatures = parse_temperatures(o.temperatures);
    } catch (const Error& e) {
      throw Error(ErrorCode::kInvalidArgument, fmt::format("--temperatures: {}", e.what()));
    }
  }
  stt.decode.task = o.task == "translate" ? WhisperTask::kTranslate : WhisperTask::kTranscribe;
  stt.decode.prompt = o.prompt;
  stt.decode.hotwords = o.hotwords;
  stt.word_timestamps = o.word_timestamps;
}

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
  SttOptions stt;
  apply_decoding(o, stt);
  const int width = stt.fallback.max_width(stt.decode);
  EngineConfig ec;
  ec.models = {ModelSpec::silero_vad(o.vad_model), ModelSpec::whisper(o.model)};
  ec.models[0].num_workers = o.workers;
  ec.models[1].num_workers = o.stt_workers;
  ec.models[1].session.intra_op_threads = o.stt_threads;
  // A prompt needs longer decoder lanes (Whisper's whole context).
  ec.models[1].size_whisper_decoder(width, o.prompt.empty() && o.hotwords.empty() ? 0 : 446);
  ec.admission_control = false;
  const auto loading = std::chrono::steady_clock::now();
  Engine engine(ec);  // the models are loaded before any file: a bad model fails once
  const double load_s = seconds_since(loading);
  run_options.stream.vad.model_rate_hz = o.model_rate_hz;
  run_options.stream.vad.params = o.vad;
  run_options.stream.stt = stt;
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
      "as faster-whisper does without timestamps: greedy by default (live streams' decoding, the fastest), or\n"
      "faster-whisper's own defaults with --decoding faster-whisper (beam search of 5, and when a result repeats\n"
      "itself or is unsure, sampling again at temperatures 0.2 to 1.0). Segments Whisper finds no speech in\n"
      "are left out. txt: the text; srt and vtt: one cue per segment (one file), or per word with --word-timestamps.\n"
      "With --word-timestamps each JSON segment also holds \"words\": [{\"start\":s,\"end\":s,\"word\":\"...\",\"probability\":p}].\n"
      "Examples:\n"
      "  brisvox transcribe call.wav                      (Whisper base-int8: any language, detected)\n"
      "  brisvox transcribe --model tiny.en-int8 call.wav (English only: as accurate on English, twice as fast)\n"
      "  brisvox transcribe --format srt lecture.flac > lecture.srt\n"
      "  brisvox transcribe --word-timestamps --format vtt lecture.flac > words.vtt\n"
      "  brisvox transcribe --model base interview.wav        (float32 weights)\n"
      "  brisvox transcribe --model base-int8 --language de interview.wav\n"
      "  brisvox transcribe --model base --decoding faster-whisper --task translate entrevista.wav\n"
      "  brisvox transcribe --prompt \"Brisvox, Pipecat, LiveKit.\" --hotwords \"Zendesk Twilio\" call.wav\n"
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
  app.add_option("--task", o->task, "transcribe, or translate (into English; multilingual models)")
      ->check(CLI::IsMember({"transcribe", "translate"}))
      ->capture_default_str();
  app.add_option("--decoding", o->decoding,
                 "greedy, or faster-whisper (its defaults: beam 5, best_of 5, temperatures 0,0.2,...,1.0 with its "
                 "compression-ratio, log-prob and no-speech thresholds)")
      ->check(CLI::IsMember({"greedy", "faster-whisper"}))
      ->capture_default_str();
  app.add_option("--beam-size", o->beam_size, "Beams at temperature 0, 1 to 16 (default: the --decoding's)")
      ->check(CLI::Range(1, 16));
  app.add_option("--best-of", o->best_of, "Samples per fallback temperature, 1 to 16 (default: the --decoding's)")
      ->check(CLI::Range(1, 16));
  app.add_option("--temperatures", o->temperatures,
                 "Temperatures tried in turn, comma-separated (0 alone: no fallback; default: the --decoding's)");
  app.add_option("--prompt", o->prompt,
                 "Text the speech is taken to follow: names, spellings, a style (faster-whisper's initial_prompt; "
                 "every segment gets it)");
  app.add_option("--hotwords", o->hotwords, "Words likely to be said (faster-whisper's hotwords)");
  app.add_flag("--word-timestamps", o->word_timestamps,
               "Times of each word (faster-whisper's word_timestamps): \"words\" in JSON, one cue per word in srt/vtt; "
               "an extra decoder pass per segment");
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
