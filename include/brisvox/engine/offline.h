// Whole recordings through an engine: files (`brisvox vad`, `brisvox turn`) and audio already in
// memory (`POST /v1/vad`), one runner for all. Every recording is a stream of the engine; several
// run at once, so that frames of different recordings share model runs. Each is fed as fast as
// its stream takes it (nothing is ever refused), its end-of-turn analyses are waited for
// (TurnOptions::wait_for_verdict), so a result does not depend on timing or on the other recordings.
// Files and encoded bytes are decoded a block at a time as their streams take audio
// (AudioReader), so memory does not grow with a recording's duration.
//
//   OfflineOptions options;                        // the pipeline: options.stream
//   run_offline(engine, inputs, options, [](const OfflineResult& r) { ... });
//
// The documents of a result (JSON, CSV, RTTM, subtitles, ...) are the formats layer's
// (brisvox/formats/).
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/engine/engine.h"
#include "brisvox/error.h"

namespace brisvox {

struct OfflineInput {
  std::string name;            // the result's "file": the path ("-": stdin), or a request's name
  std::optional<Audio> audio;  // decoded already; unset: `encoded`, or the file `name`
  // Set (non-empty): an encoded file in memory (a request body), decoded as it is fed with
  // options.read (AudioReader::open_memory); it must outlive the run.
  std::span<const std::byte> encoded = {};
};

struct TurnVerdict {
  double start_s = 0;
  double end_s = 0;
  float probability = -1.0f;  // -1: no verdict (a timeout before any analysis)
  TurnAction::Reason reason = TurnAction::Reason::kModel;
};

struct TranscriptSegment {
  double start_s = 0;  // the VAD segment, in seconds of the recording
  double end_s = 0;
  Transcript transcript;
};

struct OfflineResult {
  std::string file;
  int channel = -1;  // the channel analysed alone (0-based: --channels split, --channel N); -1: their mean
  int input_sample_rate_hz = 0;
  double duration_s = 0;
  std::vector<std::pair<double, double>> segments_s;  // [start, end) in seconds
  std::vector<float> frame_probs;                      // with VadOptions::emit_probabilities
  std::vector<TurnVerdict> turns;                      // with a turn stage
  int turn_incomplete_events = 0;
  std::vector<TurnVerdict> incomplete_turns;           // those events: paused, not finished (reason unused)
  std::vector<TranscriptSegment> transcripts;          // with an stt stage, in order
  std::size_t samples_read = 0;  // input samples decoded (per channel)
  std::size_t samples_fed = 0;   // input samples the stream accepted (the rest was never fed)
  std::optional<Error> error;    // set if the recording failed; the other fields are then partial
};

// What has been read of a run so far (OfflineOptions::on_progress).
struct OfflineProgress {
  std::size_t num_inputs = 0;
  std::size_t num_done = 0;      // inputs finished (reported or not)
  double seconds_read = 0;       // audio decoded so far, all inputs, in seconds of each input
  double fraction = 0;           // 0..1: finished inputs, plus the read share of open ones whose length is known
};

struct OfflineOptions {
  AudioReadOptions read;           // how files are read (max_duration_s included)
  StreamConfig stream;             // the pipeline; sample_rate_hz comes from each recording
  std::size_t max_open = 64;       // streams in flight at once (a split recording: one per channel)
  // Set (by another thread): stop; the recordings not finished fail with Error(kClosed).
  const std::atomic<bool>* abort = nullptr;
  // Set (by another thread): the caller no longer wants the results (its client went away): stop
  // as with `abort`, with Error(kClosed) saying so.
  const std::atomic<bool>* cancel = nullptr;
  // Channels of a multichannel recording: their mean (one result, channel -1) by default;
  // split_channels: one stream and one result per channel (a call: agent left, caller right),
  // reported in channel order; channel >= 0: that channel alone (kInvalidArgument for a
  // recording without it). A mono recording split is its channel 0.
  bool split_channels = false;
  int channel = -1;
  // Called on the calling thread as audio is read, at most every 100 ms, and once at the end.
  std::function<void(const OfflineProgress&)> on_progress;
};

// Runs every input; calls on_result once per input (per channel when split), in input order, on
// the calling thread. A
// recording that cannot be read or fails in the engine has its error in the result; the others go
// on. The first kError event of a recording ends it (its result carries that error).
void run_offline(Engine& engine, std::span<const OfflineInput> inputs, const OfflineOptions& options,
                 const std::function<void(const OfflineResult&)>& on_result);

// One recording.
OfflineResult run_offline(Engine& engine, const OfflineInput& input, const OfflineOptions& options);

}  // namespace brisvox
