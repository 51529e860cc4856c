// Logging: one process-wide logger (spdlog underneath) that brisvox and ONNX Runtime write to.
// ONNX Runtime's own messages are routed here, so one level setting governs both.
#pragma once

#include <functional>
#include <string_view>

namespace brisvox {

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kOff };

// Default: kWarn, to stderr. Thread-safe.
void set_log_level(LogLevel level);
LogLevel log_level();
// Parses "trace|debug|info|warn|error|off"; throws Error(kInvalidArgument) otherwise.
LogLevel parse_log_level(std::string_view name);
// "trace", "debug", "info", "warn", "error" or "off".
std::string_view log_level_name(LogLevel level);

// Replaces the stderr sink (tests capture warnings this way). Pass nullptr to restore stderr.
// The callback may be called from any thread, concurrently.
using LogSink = std::function<void(LogLevel, std::string_view message)>;
void set_log_sink(LogSink sink);

}  // namespace brisvox
