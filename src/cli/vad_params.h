// The segmenter's options (silero-vad's get_speech_timestamps parameters), as `brisvox vad` and
// `brisvox turn` both take them.
#pragma once

#include <CLI/CLI.hpp>

#include "brisvox/models/vad/segmenter_params.h"

namespace brisvox::cli {

void add_vad_params(CLI::App& app, SegmenterParams& p);

}  // namespace brisvox::cli
