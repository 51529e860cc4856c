#include "cli/file_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "brisvox/audio/audio_reader.h"
#include "brisvox/error.h"
#include "cli/commands.h"
#include "cli/progress_bar.h"

namespace brisvox::cli {
namespace {

using FilePtr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

// The -o file of an input: its stem, "stdin" for "-".
std::string output_name(const std::string& file, std::string_view extension) {
  const std::string stem = file == "-" ? std::string("stdin") : std::filesystem::path(file).stem().string();
  return stem + std::string(extension);
}

}  // namespace

void add_file_options(CLI::App& app, FileOptions& o, const std::string& files_help) {
  app.add_option("files", o.files, files_help + "; - reads standard input")->required();
  app.add_option("-o,--output-dir", o.output_dir, "Write one file per input here instead of stdout");
  app.add_option("--raw-encoding", o.raw_encoding, "Headerless input: pcm_s16le, pcm_f32le, mulaw or alaw");
  app.add_option("--raw-rate", o.raw_rate_hz,
                 "Sample rate of headerless input (.raw/.pcm/.ul/.al or --raw-encoding; G.711 defaults to 8000)");
  app.add_option("--channels", o.channels,
                 "mix: analyse the mean of the channels; split: each channel on its own (a call: agent left, "
                 "caller right), one result per channel")
      ->capture_default_str();
  app.add_option("--channel", o.channel, "Analyse only this channel (0 = left/first)");
  app.add_flag("--no-progress", o.no_progress, "No progress bar on stderr");
  app.add_flag("--progress", o.progress, "Show the progress bar even when stderr is not a terminal");
  app.add_flag("--summary", o.summary,
               "At the end, print the files, the seconds of audio and the wall time (model loading apart) to stderr");
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void apply_file_options(const FileOptions& o, OfflineOptions& run) {
  if (!o.raw_encoding.empty()) run.read.raw_encoding = parse_encoding(o.raw_encoding);
  run.read.raw_sample_rate_hz = o.raw_rate_hz;
  if (o.channels != "mix" && o.channels != "split") {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--channels must be mix or split, got '{}'", o.channels));
  }
  if (o.channel < -1) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--channel must be 0 or more, got {}", o.channel));
  }
  if (o.channel >= 0 && o.channels == "split") {
    throw Error(ErrorCode::kInvalidArgument, "--channel N and --channels split exclude each other: give one");
  }
  run.split_channels = o.channels == "split";
  run.channel = o.channel;
  if (o.raw_rate_hz != 0) {
    // Silently ignoring it would analyse the file at its header's rate while the user believes
    // otherwise.
    for (const auto& file : o.files) {
      if (is_headerless(file, run.read)) continue;
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("--raw-rate {} is for headerless input, but '{}' is read by its header (its "
                              "extension is not .raw, .pcm, .ul or .al): drop --raw-rate, or add --raw-encoding "
                              "to read it as headerless PCM",
                              o.raw_rate_hz, file));
    }
  }
  std::size_t num_stdin = 0;
  for (const auto& file : o.files) num_stdin += file == "-" ? 1 : 0;
  if (num_stdin > 1) throw Error(ErrorCode::kInvalidArgument, "'-' (standard input) can be given only once");
}

void check_workers(std::string_view option, int value) {
  if (value < 0 || value > 1024) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{} must be 0 (the default) to 1024, got {}", option, value));
  }
}

int run_files(std::string_view command, Engine& engine, const FileOptions& o, const OfflineOptions& run_in,
              const ResultWriter& writer, double load_s) {
  const auto started = std::chrono::steady_clock::now();
  if (!o.output_dir.empty()) {
    // Two inputs with the same stem would write the same output file: refuse before any work.
    std::map<std::string, std::string> by_output;
    for (const auto& file : o.files) {
      const std::string name = output_name(file, writer.extension);
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
  if (o.output_dir.empty() && writer.header) writer.header(stdout);
  ProgressBar progress(o.progress || (!o.no_progress && isatty(STDERR_FILENO)));
  OfflineOptions run = run_in;
  OfflineProgress last;
  run.on_progress = [&progress, &last](const OfflineProgress& p) {
    last = p;
    progress.update(p);
  };
  int failures = 0;
  // -o: the open output of the input being reported (its channels arrive one after another).
  FilePtr out(nullptr, &std::fclose);
  std::string out_file;
  std::vector<OfflineInput> inputs;
  for (const auto& file : o.files) inputs.push_back(OfflineInput{file, std::nullopt});
  run_offline(engine, inputs, run, [&](const OfflineResult& r) {
    progress.clear();
    try {
      if (r.error) throw *r.error;
      if (o.output_dir.empty()) {
        writer.write(stdout, r);
        if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
          throw Error(ErrorCode::kIo, fmt::format("cannot write the result to standard output: {}", std::strerror(errno)));
        }
      } else {
        if (!out || out_file != r.file) {
          const auto out_path = std::filesystem::path(o.output_dir) / output_name(r.file, writer.extension);
          out.reset(std::fopen(out_path.c_str(), "w"));
          out_file = r.file;
          if (!out) throw Error(ErrorCode::kIo, fmt::format("cannot write '{}'", out_path.string()));
          if (writer.header) writer.header(out.get());
        }
        writer.write(out.get(), r);
        if (std::fflush(out.get()) != 0 || std::ferror(out.get())) {
          throw Error(ErrorCode::kIo, fmt::format("cannot write '{}': {}", out_file, std::strerror(errno)));
        }
      }
    } catch (const Error& e) {
      const std::string channel = r.channel >= 0 ? fmt::format(" (channel {})", r.channel) : std::string();
      std::fprintf(stderr, "brisvox %.*s: %s%s: error [%s]: %s\n", static_cast<int>(command.size()), command.data(),
                   r.file.c_str(), channel.c_str(), std::string(to_string(e.code())).c_str(), e.what());
      ++failures;
    }
  });
  progress.finish();
  if (o.summary) {
    const double wall = seconds_since(started);
    std::fprintf(stderr,
                 "brisvox %.*s: %zu file(s), %.1f s of audio in %.2f s (%.1fx real time), %d failed; the models "
                 "loaded in %.2f s before that\n",
                 static_cast<int>(command.size()), command.data(), o.files.size(), last.seconds_read, wall,
                 wall > 0 ? last.seconds_read / wall : 0.0, failures, load_s);
  }
  return failures == 0 ? kExitOk : kExitInputFailed;
}

}  // namespace brisvox::cli
