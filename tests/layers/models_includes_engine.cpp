#include "brisvox/engine/engine.h"  // models is below engine: must not compile
