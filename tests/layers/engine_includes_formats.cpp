#include "brisvox/formats/result_json.h"  // engine is below formats: must not compile
