// `brisvox bench --stt-model FOLDER`: speech-to-text on the engine with live streams. N streams
// each get the bundled recording (or --wav) in real time, looped; every speech segment the VAD
// ends is transcribed by the engine's stt stage, batched across the streams. Measured: the
// transcript latency from the segment's end (its speech_end event) to its transcript event, the
// audio transcribed per wall second, the Whisper model's runs and batch sizes, and the compute
// per second of speech.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "bench/bench_runner.h"
#include "brisvox/models/stt/whisper_features.h"

namespace brisvox::bench {

struct SttPhaseSpec {
  std::string stt_model;  // folder or alias (resolve_stt_model)
  std::string vad_model;  // as EngineConfig
  int num_streams = 1;
  int vad_workers = 1;
  int stt_workers = 1;
  int stt_threads = 1;  // intra-op threads per Whisper run
  int stt_max_batch = 8;
  WhisperWindow window = WhisperWindow::kFull;
  double seconds = 30.0;  // measured, after one pass of warm-up segments
};

// Runs the phase on `audio` (16 kHz, looped). Returns the JSON object of the report's "stt" phase.
// Throws Error.
nlohmann::ordered_json run_stt_phase(const SttPhaseSpec& spec, const LoopedAudio& audio);

}  // namespace brisvox::bench
