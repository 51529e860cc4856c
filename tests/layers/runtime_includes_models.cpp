#include "brisvox/models/vad/silero_vad.h"  // runtime is below models: must not compile
