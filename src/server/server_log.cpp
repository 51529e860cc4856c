#include "server/server_log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace brisvox::server {
namespace {

std::atomic<bool> timestamps{false};

}  // namespace

void set_log_timestamps(bool on) { timestamps.store(on); }

void log_line(std::string_view line) {
  static std::mutex mu;
  char stamp[40] = "";
  if (timestamps.load()) {
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm utc{};
    gmtime_r(&t, &utc);
    const std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
    std::snprintf(stamp + n, sizeof stamp - n, ".%03dZ ", static_cast<int>(ms));
  }
  std::lock_guard lock(mu);
  std::fprintf(stderr, "%sbrisvox serve: %.*s\n", stamp, static_cast<int>(line.size()), line.data());
  std::fflush(stderr);
}

}  // namespace brisvox::server
