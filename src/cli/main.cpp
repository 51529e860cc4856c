// brisvox: speech detection from the command line.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "brisvox/error.h"
#include "brisvox/log.h"
#include "brisvox/runtime/runtime_info.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace brisvox;
  CLI::App app{
      "brisvox: local, real-time speech inference (voice activity detection, end of turn, text-to-speech) on ONNX Runtime.\n",
      "brisvox"};
  app.footer(
      "Examples:\n"
      "  brisvox vad call.wav                         speech segments as JSON\n"
      "  brisvox vad --format rttm *.wav > vad.rttm   many files, RTTM\n"
      "  brisvox vad --model v5 --frame-probs a.flac  with per-chunk probabilities\n"
      "  brisvox vad --raw-rate 8000 --raw-encoding mulaw call.ul\n"
      "  brisvox turn call.wav                        end-of-turn detection (Smart Turn v3.2)\n"
      "  brisvox serve --port 8700                    WebSocket/HTTP server (docs/PROTOCOL.md)\n"
      "  brisvox doctor                               ONNX Runtime, models, threads\n"
      "  brisvox mel speech.wav -o mel.npy            Whisper log-mel features [80, frames]\n"
      "  brisvox bench --json                         streams per core, latency, vs a session per stream\n"
      "  brisvox say -o hello.wav \"Hello there.\"       text-to-speech with a Piper voice (brisvox voices)\n"
      "Run `brisvox COMMAND --help` for the options of a command.");
  app.require_subcommand(1);
  // Global options (--log-level) are accepted after the subcommand too: `brisvox vad --log-level info a.wav`.
  app.fallthrough();
  app.set_version_flag("--version", fmt::format("brisvox {} (ONNX Runtime {})", BRISVOX_VERSION,
                                                ort_version()));
  std::string level = "warn";
  app.add_option("--log-level", level, "trace, debug, info, warn, error or off")
      ->capture_default_str();

  std::map<CLI::App*, cli::Command> commands;
  auto add = [&](cli::Command (*adder)(CLI::App&), const char* name, const char* description) {
    CLI::App* sub = app.add_subcommand(name, description);
    commands[sub] = adder(*sub);
  };
  add(&cli::add_vad_command, "vad", "Detect speech in audio files and print the segments");
  add(&cli::add_turn_command, "turn", "Detect speech and the ends of turns (Smart Turn v3) in audio files");
  add(&cli::add_transcribe_command, "transcribe", "Transcribe the speech of audio files (Whisper), segment by segment");
  add(&cli::add_serve_command, "serve", "Serve speech detection over HTTP and WebSocket (docs/PROTOCOL.md)");
  add(&cli::add_doctor_command, "doctor",
      "Report the ONNX Runtime build, providers, bundled models and thread use");
  add(&cli::add_mel_command, "mel", "Write the Whisper log-mel features of an audio file as .npy");
  add(&cli::add_bench_command, "bench",
      "Measure streams per core, added latency and memory per stream against a session per stream");
  add(&cli::add_loadtest_command, "loadtest", "Load-test a running `brisvox serve` on this machine: WebSocket streams in real time");
  add(&cli::add_say_command, "say", "Speak text with a Piper voice into a WAV file or raw PCM (text-to-speech)");
  add(&cli::add_voices_command, "voices", "List the installed Piper voices");

  try {
    app.parse(argc, argv);
    set_log_level(parse_log_level(level));
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? cli::kExitOk : cli::kExitUsage;
  } catch (const Error& e) {
    std::fprintf(stderr, "brisvox: %s\n", e.what());
    return cli::kExitUsage;
  }
  for (CLI::App* sub : app.get_subcommands()) {
    try {
      const int status = commands.at(sub)();
      // Output that never reached its file (a full disk, `> /dev/full`) is a failure, whatever
      // the command printed: a script must not read an empty result as success.
      if (status == cli::kExitOk && (std::fflush(stdout) != 0 || std::ferror(stdout))) {
        std::fprintf(stderr, "brisvox %s: error [io]: cannot write to standard output: %s\n", sub->get_name().c_str(),
                     std::strerror(errno));
        return cli::kExitInputFailed;
      }
      return status;
    } catch (const Error& e) {
      std::fprintf(stderr, "brisvox %s: error [%s]: %s\n", sub->get_name().c_str(),
                   std::string(to_string(e.code())).c_str(), e.what());
      return e.code() == ErrorCode::kInvalidArgument ? cli::kExitUsage : cli::kExitInputFailed;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "brisvox %s: internal error: %s\n", sub->get_name().c_str(), e.what());
      return cli::kExitInputFailed;
    }
  }
  return cli::kExitOk;
}
