// The control: the same set-up as the other probes, including a header of a layer below.
#include "brisvox/models/vad/silero_vad.h"
#include "runtime/model_session.h"

int brisvox_layer_probe_control() { return brisvox::kSileroStateWidth; }
