// The segmenter's options (silero-vad's get_speech_timestamps parameters), as `brisvox vad` and
// `brisvox turn` both take them.
#pragma once

#include <CLI/CLI.hpp>

#include "brisvox/models/vad/segmenter_params.h"

namespace brisvox::cli {

void add_vad_params(CLI::App& app, SegmenterParams& p);

// `--model-rate`: the rate Silero runs at (0: the 16 kHz model for every input, 8 kHz upsampled;
// 8000: the 8 kHz model). check_model_rate throws Error(kInvalidArgument) for any other value.
void add_model_rate_option(CLI::App& app, int& model_rate_hz);
void check_model_rate(int model_rate_hz);

}  // namespace brisvox::cli
