// Runs many audio files through one Engine as concurrent streams, so that frames of different
// files share model runs. Results come back in the order the files were given.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/engine/engine.h"
#include "brisvox/error.h"

namespace brisvox::cli {

struct FileResult {
  std::string file;
  int input_sample_rate_hz = 0;
  double duration_s = 0;
  std::vector<std::pair<double, double>> segments_s;
  std::vector<float> frame_probs;  // when requested
  struct Turn {
    double start_s = 0, end_s = 0;
    float probability = -1.0f;  // -1: no verdict (a timeout before any analysis)
    TurnAction::Reason reason = TurnAction::Reason::kModel;
  };
  std::vector<Turn> turns;         // with StreamConfig::detect_turns
  int turn_incomplete_events = 0;
  std::optional<Error> error;      // set if the file failed; the other fields are then partial
};

struct FileRunnerOptions {
  AudioReadOptions read;
  StreamConfig stream;      // sample_rate_hz is taken from each file
  std::size_t max_open = 64;  // files in flight at once
};

// Calls `on_result` once per file, in input order, on the calling thread.
void run_files(Engine& engine, const std::vector<std::string>& files, const FileRunnerOptions& options,
               const std::function<void(const FileResult&)>& on_result);

}  // namespace brisvox::cli
