#include "server/server.h"  // formats is below server: must not compile
