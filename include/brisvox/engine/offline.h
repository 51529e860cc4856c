// Whole recordings through an engine: files (`brisvox vad`, `brisvox turn`) and audio already in
// memory (`POST /v1/vad`), one runner for all. Every recording is a stream of the engine; several
// run at once, so that frames of different recordings share model runs. Each is fed as fast as
// its stream takes it (nothing is ever refused), its end-of-turn analyses are waited for
// (TurnStage::wait_for_verdict), so a result does not depend on timing or on the other recordings.
//
//   OfflineOptions options;                        // the pipeline: options.stream
//   run_offline(engine, inputs, options, [](const OfflineResult& r) { puts(result_json(r, ...)); });
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/engine/engine.h"
#include "brisvox/error.h"

namespace brisvox {

struct OfflineInput {
  std::string name;            // the result's "file": the path, or a request's name
  std::optional<Audio> audio;  // decoded already (a request body); unset: load_audio(name)
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
  int input_sample_rate_hz = 0;
  double duration_s = 0;
  std::vector<std::pair<double, double>> segments_s;  // [start, end) in seconds
  std::vector<float> frame_probs;                      // with VadStage::emit_probabilities
  std::vector<TurnVerdict> turns;                      // with a turn stage
  int turn_incomplete_events = 0;
  std::vector<TranscriptSegment> transcripts;          // with an stt stage, in order
  std::size_t samples_fed = 0;   // input samples the stream accepted (the rest was never fed)
  std::optional<Error> error;    // set if the recording failed; the other fields are then partial
};

struct OfflineOptions {
  AudioReadOptions read;           // how files are read
  StreamConfig stream;             // the pipeline; sample_rate_hz comes from each recording
  std::size_t max_open = 64;       // recordings in flight at once
  // Set (by another thread): stop; the recordings not finished fail with Error(kClosed).
  const std::atomic<bool>* abort = nullptr;
};

// Runs every input; calls on_result once per input, in input order, on the calling thread. A
// recording that cannot be read or fails in the engine has its error in the result; the others go
// on. The first kError event of a recording ends it (its result carries that error).
void run_offline(Engine& engine, std::span<const OfflineInput> inputs, const OfflineOptions& options,
                 const std::function<void(const OfflineResult&)>& on_result);

// One recording.
OfflineResult run_offline(Engine& engine, const OfflineInput& input, const OfflineOptions& options);

// The parts of the result document, in the order they are written.
enum class ResultPart { kSegments, kFrameProbs, kTurns };

// The JSON object of one result, on one line without its newline:
//   {"file":...,"sample_rate":<input rate>,"duration":s, then the parts asked for in order:
//    "segments":[{"start":s,"end":s},...], "frame_probs":[p,...],
//    "turns":[{"start":s,"end":s,"probability":p|null,"reason":"model|timeout|end_of_stream"},...]}
// What `brisvox vad --format json` (segments, frame_probs), `brisvox turn` (turns, segments) and
// POST /v1/vad (segments, frame_probs, turns) print. Invalid UTF-8 in the file name is replaced.
std::string result_json(const OfflineResult& result, std::span<const ResultPart> parts);
inline std::string result_json(const OfflineResult& result, std::initializer_list<ResultPart> parts) {
  return result_json(result, std::span(parts.begin(), parts.size()));
}

// The transcription document of one result (`brisvox transcribe --format json`, POST
// /v1/transcribe), on one line without its newline:
//   {"file":...,"duration":s,"text":"...","segments":[{"start":s,"end":s,"text":"..."},...]}
// "text" joins the segments' texts with spaces; each text is trimmed of surrounding whitespace;
// segments without speech (Whisper's no-speech rule) are left out.
std::string transcript_json(const OfflineResult& result);
// The recording's whole text (as "text" above).
std::string transcript_text(const OfflineResult& result);

}  // namespace brisvox
