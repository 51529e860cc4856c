#include "engine/sync/spsc_ring.h"  // an engine-internal header, from models: must not compile
