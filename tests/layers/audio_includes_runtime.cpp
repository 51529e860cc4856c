#include "brisvox/runtime/session_config.h"  // audio is below runtime: must not compile
