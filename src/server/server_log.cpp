#include "server/server_log.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>

#include "brisvox/log.h"

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

namespace {

std::atomic<std::FILE*> log_out{nullptr};  // stderr unless foreign output is captured

// Lines other code writes to file descriptor 2 (libmpg123 inside libsndfile, ONNX Runtime), one
// record each, until the process ends.
void relay_foreign_lines(int fd) {
  std::FILE* in = ::fdopen(fd, "r");
  if (in == nullptr) return;
  char* line = nullptr;
  std::size_t capacity = 0;
  ssize_t n = 0;
  while ((n = ::getline(&line, &capacity, in)) > 0) {
    std::string_view text(line, static_cast<std::size_t>(n));
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    if (!text.empty()) log_record(text, {{"from", std::string_view("stderr")}});
  }
  std::free(line);
  std::fclose(in);
}

}  // namespace

void route_all_output_through_log() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The engine's own messages ("[brisvox warn] ...") become records with their level.
    set_log_sink([](LogLevel level, std::string_view message) {
      log_record(message, {{"level", log_level_name(level)}});
    });
    // Then fd 2 itself: the log keeps a copy of it, and what anyone else writes there arrives
    // through a pipe, a line at a time.
    const int real = ::dup(STDERR_FILENO);
    int pipe_fds[2];
    if (real < 0 || ::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      if (real >= 0) ::close(real);
      return;
    }
    std::FILE* out = ::fdopen(real, "w");
    if (out == nullptr || ::dup2(pipe_fds[1], STDERR_FILENO) < 0) {
      if (out != nullptr) std::fclose(out);
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
      return;
    }
    ::close(pipe_fds[1]);
    log_out.store(out);
    std::thread(relay_foreign_lines, pipe_fds[0]).detach();
  });
}

void log_record(std::string_view message, std::initializer_list<LogField> fields) {
  static std::mutex mu;
  const std::string line = format.load() == LogFormat::kJson ? json_line(message, fields) : text_line(message, fields);
  std::FILE* out = log_out.load();
  if (out == nullptr) out = stderr;
  std::lock_guard lock(mu);
  std::fwrite(line.data(), 1, line.size(), out);
  std::fputc('\n', out);
  std::fflush(out);
}

}  // namespace brisvox::server
