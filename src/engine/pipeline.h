// A stream's pipeline: the stages its StreamConfig asks for (stream/stage.h), each bound to the
// pool of the model it names. The one place that knows which stages exist: a new stage is a class
// in stages/ and a line here.
#pragma once

#include <memory>
#include <vector>

#include "brisvox/engine/call.h"
#include "brisvox/engine/engine_config.h"
#include "engine/call/call_link.h"
#include "engine/model_registry.h"
#include "engine/stream/stage.h"

namespace brisvox::engine {

// Checks that `models` has the models the stages of `config` name (Error(kInvalidArgument) naming
// the missing one and listing the engine's), adapts `config` to what its stages need (the stt stage
// caps the VAD's max_speech_s at its window, so that longer speech is split at the VAD's own split
// points) and makes the stages, in pipeline order: turn, then stt, then a call's barge-in (when
// `barge_in` is given and enabled: the call's link). `model_rate_hz`: the stream's VAD rate.
std::vector<std::unique_ptr<Stage>> make_stages(StreamConfig& config, int model_rate_hz, const ModelRegistry& models,
                                                const BargeInOptions* barge_in = nullptr,
                                                std::shared_ptr<CallLink> call = nullptr);

}  // namespace brisvox::engine
