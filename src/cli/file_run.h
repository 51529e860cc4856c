// What the file commands (`brisvox vad`, `turn`, `transcribe`) share: the inputs ("-" is stdin),
// headerless PCM, which channels to analyse, where results go (stdout or one file per input in
// -o DIR), the progress bar, and the error lines. One run of the offline runner
// (brisvox/engine/offline.h) serves them all; each command only says how a result is written.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "brisvox/engine/engine.h"
#include "brisvox/engine/offline.h"

namespace brisvox::cli {

struct FileOptions {
  std::vector<std::string> files;
  std::string output_dir;
  std::string raw_encoding;
  int raw_rate_hz = 0;
  std::string channels = "mix";  // mix (their mean) or split (one result per channel)
  int channel = -1;              // >= 0: that channel alone
  bool no_progress = false;
  bool progress = false;         // the bar even when stderr is not a terminal
  bool summary = false;          // at the end, the run's files, audio and times on stderr
};

// Registers the files and the options above on `app`.
void add_file_options(CLI::App& app, FileOptions& o, const std::string& files_help);

// Checks the options (kInvalidArgument naming the option) and sets them on `run`: read options,
// channels. `--raw-rate` for an input that is read by its header is refused: it would be ignored.
void apply_file_options(const FileOptions& o, OfflineOptions& run);

// Refuses a thread count outside 0..1024 naming the option (`--workers`), before the engine
// would name its config field.
void check_workers(std::string_view option, int value);

struct ResultWriter {
  std::string_view extension;                                   // of -o files: ".json"
  std::function<void(std::FILE*)> header;                       // once per output (may be empty)
  std::function<void(std::FILE*, const OfflineResult&)> write;  // one result
};

// Runs every file through `engine` and writes each result with `writer`: to stdout, or to
// DIR/<stem><extension> with -o (a split recording's channels in one file, in channel order;
// stdin is "stdin"). A failed input is a line "brisvox <command>: <file>: error [code]: message"
// on stderr, and the run goes on. Returns kExitOk, or kExitInputFailed if any input failed.
// `load_s`: how long the command took to create `engine` (its models), for --summary.
int run_files(std::string_view command, Engine& engine, const FileOptions& o, const OfflineOptions& run,
              const ResultWriter& writer, double load_s);

// Seconds since `start`, for a command's load_s.
double seconds_since(std::chrono::steady_clock::time_point start);

}  // namespace brisvox::cli
