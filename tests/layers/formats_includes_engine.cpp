// The control of the formats layer: its probes' set-up, including a header of the layer below.
#include "brisvox/engine/offline.h"

int brisvox_layer_probe_control() { return static_cast<int>(sizeof(brisvox::OfflineResult)); }
