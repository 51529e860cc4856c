// `brisvox say`: text to speech with a Piper voice, through the engine (Engine::open_speech), to a
// WAV file, or raw 16-bit PCM to a file or stdout, written sentence by sentence as it is made.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>

#include "brisvox/audio/wav_writer.h"
#include "brisvox/engine/engine.h"
#include "brisvox/error.h"
#include "brisvox/models/tts/piper_tts.h"
#include "cli/commands.h"

namespace brisvox::cli {
namespace {

struct SayOptions {
  std::string text;
  std::string text_file;
  std::string voice = "en_US-joe-medium";
  std::string output = "-";
  std::string format;  // empty: by the output's extension (wav unless it ends in .raw/.pcm)
  int rate_hz = 0;
  std::optional<float> length_scale;
  std::optional<float> noise_scale;
  std::optional<float> noise_w_scale;
  std::optional<int> speaker;
  float volume = 1.0f;
  bool fast_start = false;  // a file is written whole: Piper's sentences exactly, unless asked
  bool quiet = false;
};

std::string read_text(const SayOptions& o) {
  if (!o.text.empty() && !o.text_file.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "give the text either as an argument or with --text-file, not both");
  }
  if (o.text_file.empty()) {
    if (o.text.empty()) throw Error(ErrorCode::kInvalidArgument, "no text: give TEXT or --text-file FILE (- for stdin)");
    return o.text;
  }
  // At most one byte past the limit is read: /dev/zero or a huge file is refused, not read whole.
  std::ifstream file;
  std::istream* in = &std::cin;
  if (o.text_file != "-") {
    file.open(o.text_file, std::ios::binary);
    if (!file) throw Error(ErrorCode::kIo, fmt::format("cannot open text file '{}'", o.text_file));
    in = &file;
  }
  std::string text(kPiperDefaultMaxTextBytes + 1, '\0');
  in->read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in->gcount()));
  if (text.size() > kPiperDefaultMaxTextBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("the text of '{}' is longer than {} bytes, the limit of one request; split it into "
                            "several files",
                            o.text_file, kPiperDefaultMaxTextBytes));
  }
  return text;
}

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// Where the audio goes: a WAV file written sentence by sentence, a WAV held until the end (stdout
// cannot seek back to complete a header), or raw samples written as they come.
class AudioSink {
 public:
  AudioSink(const std::string& output, bool wav, int rate_hz) : output_(output), wav_(wav), rate_hz_(rate_hz) {
    if (output_ == "-") return;
    if (wav_) {
      file_.emplace(output_, rate_hz_);
    } else {
      raw_ = std::fopen(output_.c_str(), "wb");
      if (raw_ == nullptr) throw Error(ErrorCode::kIo, fmt::format("cannot create '{}'", output_));
    }
  }
  ~AudioSink() {
    if (raw_ && raw_ != stdout) std::fclose(raw_);
  }
  AudioSink(const AudioSink&) = delete;
  AudioSink& operator=(const AudioSink&) = delete;

  void write(const std::vector<float>& samples) {
    const std::vector<std::int16_t> pcm = piper_to_int16(samples);  // as piper-tts writes its WAVs
    if (file_) {
      file_->write(pcm);
    } else if (wav_) {
      held_.insert(held_.end(), pcm.begin(), pcm.end());
    } else {
      FILE* f = raw_ ? raw_ : stdout;
      if (std::fwrite(pcm.data(), sizeof(std::int16_t), pcm.size(), f) != pcm.size() || std::fflush(f) != 0) {
        throw Error(ErrorCode::kIo, fmt::format("cannot write to '{}'", output_));
      }
    }
  }
  void finish() {
    if (file_) {
      file_->close();
    } else if (wav_) {
      const std::vector<std::byte> bytes = encode_wav(held_, rate_hz_);
      if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
        throw Error(ErrorCode::kIo, "cannot write the WAV to stdout");
      }
    } else if (raw_ && std::fclose(std::exchange(raw_, nullptr)) != 0) {
      throw Error(ErrorCode::kIo, fmt::format("cannot write to '{}'", output_));
    }
  }

 private:
  std::string output_;
  bool wav_;
  int rate_hz_;
  std::optional<WavWriter> file_;
  std::vector<std::int16_t> held_;
  FILE* raw_ = nullptr;
};

int run_say(const SayOptions& o) {
  const std::string text = read_text(o);
  const std::string format = !o.format.empty()                                          ? o.format
                             : ends_with(o.output, ".raw") || ends_with(o.output, ".pcm") ? "raw"
                                                                                          : "wav";
  if (o.output == "-" && isatty(STDOUT_FILENO)) {
    throw Error(ErrorCode::kInvalidArgument,
                "stdout is a terminal: give -o FILE.wav, or pipe the audio (brisvox say ... | aplay)");
  }
  EngineConfig ec;
  ec.models = {ModelSpec::piper_tts(o.voice)};
  ec.models[0].num_workers = 1;  // one utterance: its sentences run one after another anyway
  ec.admission_control = false;
  const auto t0 = std::chrono::steady_clock::now();
  Engine engine(ec);
  SpeechConfig sc;
  sc.sample_rate_hz = o.rate_hz;
  if (o.length_scale) sc.voice_options["length_scale"] = *o.length_scale;
  if (o.noise_scale) sc.voice_options["noise_scale"] = *o.noise_scale;
  if (o.noise_w_scale) sc.voice_options["noise_w_scale"] = *o.noise_w_scale;
  if (o.speaker) sc.voice_options["speaker_id"] = *o.speaker;
  sc.volume = o.volume;
  sc.fast_start = o.fast_start;
  Speech speech = engine.open_speech(sc);
  const auto t_loaded = std::chrono::steady_clock::now();
  const std::uint32_t id = speech.speak(text);  // bad text: Error(kInvalidArgument), no file made
  AudioSink sink(o.output, format == "wav", speech.sample_rate_hz());
  std::optional<double> first_audio_ms;
  std::uint64_t samples = 0;
  std::size_t sentences = 0;
  Event events[16];
  while (true) {
    speech.wait_events(std::chrono::milliseconds(50));
    for (std::size_t i = 0, n = speech.poll(events); i < n; ++i) {
      const Event& e = events[i];
      switch (e.type) {
        case EventType::kTtsAudio: {
          const std::vector<float> piece = speech.read_audio_payload(e);
          if (!first_audio_ms) {
            first_audio_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_loaded).count();
          }
          sink.write(piece);
          samples += piece.size();
          sentences = e.speech.sentence_count;
          break;
        }
        case EventType::kError:
          throw Error(e.error_code, speech.last_error());
        case EventType::kTtsEnd: {
          sink.finish();
          const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_loaded).count();
          const double audio_s = static_cast<double>(samples) / speech.sample_rate_hz();
          if (!o.quiet) {
            std::fprintf(stderr,
                         "brisvox say: %zu sentence%s, %.2f s of audio at %d Hz in %.2f s (%.1fx real time; first audio "
                         "after %.0f ms; voice loaded in %.2f s) -> %s\n",
                         sentences, sentences == 1 ? "" : "s", audio_s, speech.sample_rate_hz(), wall_s,
                         wall_s > 0 ? audio_s / wall_s : 0.0, first_audio_ms.value_or(0.0),
                         std::chrono::duration<double>(t_loaded - t0).count(),
                         o.output == "-" ? "stdout" : o.output.c_str());
          }
          (void)id;
          return kExitOk;
        }
        default:
          break;
      }
    }
  }
}

}  // namespace

Command add_say_command(CLI::App& app) {
  auto o = std::make_shared<SayOptions>();
  app.footer(
      "Speaks TEXT (or the text of --text-file) with a Piper voice, sentence by sentence, as brisvox's\n"
      "engine runs it (docs/CLI.md). Output: 16-bit mono WAV, or raw PCM (s16le) written as each sentence\n"
      "is ready. Voices: `brisvox voices`.\n"
      "Examples:\n"
      "  brisvox say -o hello.wav \"Hello! How can I help you today?\"\n"
      "  brisvox say --voice en_US-joe-medium --rate 16000 -o reply.wav --text-file reply.txt\n"
      "  echo \"Streaming to the speaker.\" | brisvox say --text-file - --format raw | aplay -q -r 22050 -f S16_LE -c 1\n"
      "  brisvox say --length-scale 1.2 --noise-scale 0 --noise-w-scale 0 -o slow.wav \"Deterministic and slower.\"");
  app.add_option("text", o->text, "The text to speak (UTF-8; at most 20000 bytes)");
  app.add_option("--text-file", o->text_file, "Read the text from this file ('-': stdin) instead");
  app.add_option("--voice", o->voice, "An installed voice's name or the path of a Piper VOICE.onnx (VOICE.onnx.json beside it)")
      ->capture_default_str();
  app.add_option("-o,--output", o->output, "Output file, or '-' for stdout")->capture_default_str();
  app.add_option("--format", o->format, "wav or raw (16-bit little-endian PCM); default: raw for .raw/.pcm, else wav")
      ->check(CLI::IsMember({"wav", "raw"}));
  app.add_option("--rate", o->rate_hz, "Output sample rate: 0 (the voice's), 8000, 16000, 24000 or 48000")
      ->capture_default_str();
  app.add_option("--length-scale", o->length_scale, "Phoneme length (> 1 speaks slower); default: the voice's");
  app.add_option("--noise-scale", o->noise_scale, "Generator noise (0 with --noise-w-scale 0: deterministic); default: the voice's");
  app.add_option("--noise-w-scale", o->noise_w_scale, "Duration noise; default: the voice's");
  app.add_option("--speaker", o->speaker, "Speaker id of a multi-speaker voice");
  app.add_option("--volume", o->volume, "Volume after Piper's peak normalisation, 0 to 10")->capture_default_str();
  app.add_flag("--fast-start", o->fast_start,
               "Synthesise the first sentence's first clause alone, so that streamed audio (-o -) starts sooner; "
               "off: every chunk a whole sentence, Piper's audio exactly");
  app.add_flag("-q,--quiet", o->quiet, "No summary line on stderr");
  return [o] { return run_say(*o); };
}

}  // namespace brisvox::cli
