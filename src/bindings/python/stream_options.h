// A stream's configuration from Python keyword arguments: one parser for Engine.open_stream and
// for whole files (brisvox.vad), so both take the same names, defaults and checks. The names are
// the C API's brisvox_stream_options fields (sample_rate instead of sample_rate_hz) plus the
// segmenter's two max-speech options and model_rate, which `brisvox vad` also has.
#pragma once

#include <nanobind/nanobind.h>

#include "brisvox/engine/engine_config.h"

namespace brisvox::python {

namespace nb = nanobind;

struct StreamOptions {
  StreamConfig config;
  bool emit_probabilities = false;
  bool turn = false;
};

// Throws nb::type_error for an unknown name or a value of the wrong type (naming it), and
// Error(kInvalidArgument) from StreamConfig::validate for a value out of range.
StreamOptions parse_stream_options(const nb::kwargs& kwargs, const char* function);

}  // namespace brisvox::python
