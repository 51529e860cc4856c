#include "server/server.h"  // engine is below server: must not compile
