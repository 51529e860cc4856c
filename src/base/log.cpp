#include "base/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

#include "brisvox/error.h"

namespace brisvox {
namespace {

std::atomic<LogLevel> g_level{LogLevel::kWarn};
std::mutex g_sink_mutex;
LogSink g_sink;  // guarded by g_sink_mutex; empty means stderr

std::string_view level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return "trace";
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "off";
  }
  return "?";
}

}  // namespace

std::string_view log_level_name(LogLevel level) { return level_name(level); }

void set_log_level(LogLevel level) { g_level.store(level, std::memory_order_relaxed); }
LogLevel log_level() { return g_level.load(std::memory_order_relaxed); }

LogLevel parse_log_level(std::string_view name) {
  for (LogLevel level : {LogLevel::kTrace, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn,
                         LogLevel::kError, LogLevel::kOff}) {
    if (name == level_name(level)) return level;
  }
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("unknown log level '{}': use trace, debug, info, warn, error or off", name));
}

void set_log_sink(LogSink sink) {
  std::lock_guard lock(g_sink_mutex);
  g_sink = std::move(sink);
}

namespace detail {

bool log_enabled(LogLevel level) {
  return level != LogLevel::kOff && level >= g_level.load(std::memory_order_relaxed);
}

void log_message(LogLevel level, std::string_view message) {
  std::lock_guard lock(g_sink_mutex);
  if (g_sink) {
    g_sink(level, message);
    return;
  }
  std::fprintf(stderr, "[brisvox %.*s] %.*s\n", static_cast<int>(level_name(level).size()),
               level_name(level).data(), static_cast<int>(message.size()), message.data());
}

}  // namespace detail
}  // namespace brisvox
