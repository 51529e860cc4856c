// One line per server event on stderr ("brisvox serve: stream 3 open ..."), flushed at once so
// that supervisors and tests see it. Thread-safe: lines never interleave.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace brisvox::server {

void log_line(std::string_view line);
// From now on every line starts with its UTC time, "2026-12-01T13:33:24.123Z " (ServerConfig::
// log_timestamps; off by default: supervisors such as journald stamp lines themselves).
void set_log_timestamps(bool on);

template <typename... Args>
void log_server(fmt::format_string<Args...> format, Args&&... args) {
  log_line(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace brisvox::server
