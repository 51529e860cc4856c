#include "server/server_log.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>

namespace brisvox::server {
namespace {

std::atomic<bool> timestamps{false};
std::atomic<LogFormat> format{LogFormat::kText};

// "2026-12-01T13:33:24.123Z"
std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&t, &utc);
  char stamp[40];
  const std::size_t n = std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(stamp + n, sizeof stamp - n, ".%03dZ", static_cast<int>(ms));
  return stamp;
}

bool omitted(const LogField& f) {
  const auto* s = std::get_if<std::string_view>(&f.value);
  return s != nullptr && s->empty();
}

std::string text_line(std::string_view message, std::initializer_list<LogField> fields) {
  std::string line = timestamps.load() ? utc_now() + " " : std::string();
  line += "brisvox serve: ";
  line += message;
  for (const LogField& f : fields) {
    if (f.key == "tag" && !omitted(f)) line += fmt::format(" tag={}", std::get<std::string_view>(f.value));
  }
  return line;
}

std::string json_line(std::string_view message, std::initializer_list<LogField> fields) {
  nlohmann::ordered_json j;
  j["time"] = utc_now();
  j["source"] = "brisvox serve";
  j["msg"] = message;
  for (const LogField& f : fields) {
    if (omitted(f)) continue;
    std::visit([&](const auto& v) { j[std::string(f.key)] = v; }, f.value);
  }
  // A client's bytes (a request path) need not be UTF-8: replaced, never thrown on.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void set_log_timestamps(bool on) { timestamps.store(on); }
void set_log_format(LogFormat f) { format.store(f); }

void log_record(std::string_view message, std::initializer_list<LogField> fields) {
  static std::mutex mu;
  const std::string line = format.load() == LogFormat::kJson ? json_line(message, fields) : text_line(message, fields);
  std::lock_guard lock(mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace brisvox::server
