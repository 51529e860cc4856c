// A stream's configuration from Python keyword arguments: one parser for Engine.open_stream and
// for whole files (brisvox.vad), so both take the same names, defaults and checks. The names are
// the C API's brisvox_stream_options fields (sample_rate instead of sample_rate_hz) plus the
// segmenter's two max-speech options and model_rate, which `brisvox vad` also has, and the stt
// stage's transcripts / language / window (the server's events=transcript, language, window).
// Engine.open_call takes the same names for its listening side, and its own on top
// (parse_call_options).
#pragma once

#include <nanobind/nanobind.h>

#include <map>
#include <string>

#include "brisvox/engine/call.h"
#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/speech.h"

namespace brisvox::python {

namespace nb = nanobind;

struct StreamOptions {
  StreamConfig config;
  bool emit_probabilities = false;
  bool turn = false;
  bool transcripts = false;
};

// Throws nb::type_error for an unknown name or a value of the wrong type (naming it), and
// Error(kInvalidArgument) from StreamConfig::validate for a value out of range.
StreamOptions parse_stream_options(const nb::kwargs& kwargs, const char* function);

// A call's configuration: the stream's names for its listening side, then the speech side's
// (voice_options, volume, fast_start, speech_sample_rate, max_queued) and the call's own
// (barge_in, barge_in_min_speech_ms, barge_in_on_turn_end, playout_lead_ms). The same errors,
// from CallConfig::validate.
CallConfig parse_call_options(const nb::kwargs& kwargs, const char* function);

// A speech session's configuration (Engine.open_speech): the names a call takes for its speech,
// with sample_rate for speech_sample_rate. The same errors, from SpeechConfig::validate.
SpeechConfig parse_speech_options(const nb::kwargs& kwargs, const char* function);

// Engine(voice_options=...): a dict of a model's own settings (ModelSpec::options), each value a
// str, an int or a float (written as Python's str() would); nb::type_error for anything else.
std::map<std::string, std::string, std::less<>> model_options(nb::handle dict, const char* function,
                                                              const char* argument);

}  // namespace brisvox::python
