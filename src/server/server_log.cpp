#include "server/server_log.h"

#include <cstdio>
#include <mutex>

namespace brisvox::server {

void log_line(std::string_view line) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::fprintf(stderr, "brisvox serve: %.*s\n", static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

}  // namespace brisvox::server
