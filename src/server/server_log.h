// One line per server event on stderr ("brisvox serve: stream 3 open ..."), flushed at once so
// that supervisors and tests see it. Thread-safe: lines never interleave.
//
// Two formats (ServerConfig::log_format, --log-format): text, the line as it reads, and json, one
// object per line for log collectors: {"time":..., "source":"brisvox serve", "msg": the text
// line's message, then the line's fields}. A line's fields (the stream id, the access log's
// client, status, ...) are keys of their own in JSON; in text they are already in the message,
// except the client's tag, which a text line ends with (" tag=call-42").
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <variant>

namespace brisvox::server {

enum class LogFormat { kText, kJson };

// One named value of a line. An empty string value is left out (no tag: no "tag" key).
struct LogField {
  std::string_view key;
  std::variant<std::string_view, std::int64_t, double> value;
};

void log_record(std::string_view message, std::initializer_list<LogField> fields);
inline void log_line(std::string_view line) { log_record(line, {}); }
// From now on every text line starts with its UTC time, "2026-12-01T13:33:24.123Z " (ServerConfig::
// log_timestamps; off by default: supervisors such as journald stamp lines themselves). JSON lines
// always have their "time".
void set_log_timestamps(bool on);
void set_log_format(LogFormat format);
// --log-format json: every line on stderr must be a record. The engine's messages become records
// with their level, and what other code writes to file descriptor 2 (libmpg123 inside libsndfile
// prints its warnings there) is read back through a pipe and logged a line at a time. Once per
// process; stays for its lifetime.
void route_all_output_through_log();

template <typename... Args>
void log_server(fmt::format_string<Args...> format, Args&&... args) {
  log_line(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace brisvox::server
