// Asterisk chan_websocket's control message reader (server/asterisk_messages.h) on arbitrary input.
// Invariants: never throws; ok exactly when there is no error text; an error text and an ERROR's
// report are valid UTF-8 of bounded length (they go into a log line); an accepted message's ids,
// format, digit, mark and variables are within their bounds, a start says its control format; a
// command brisvox writes is at most Asterisk's 128 bytes for a mark name of brisvox's, and JSON
// that carries its id when written as JSON.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_utf8.h"
#include "server/asterisk_messages.h"

namespace {

namespace server = brisvox::server;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  server::StreamMessage m;
  try {
    m = server::parse_asterisk_message(input);
  } catch (...) {
    FUZZ_CHECK(false, "parse_asterisk_message threw");
  }
  FUZZ_CHECK(m.ok == m.error.empty(), "ok=%d with error '%s'", m.ok, m.error.c_str());
  if (!m.ok) {
    FUZZ_CHECK(is_utf8(m.error), "the error text is not valid UTF-8");
    FUZZ_CHECK(m.error.size() < 1024, "error text of %zu bytes", m.error.size());
    return 0;
  }
  FUZZ_CHECK(m.stream_sid.empty(), "a stream id outside MEDIA_START");
  if (m.event == server::StreamEvent::kStart) {
    FUZZ_CHECK(m.start.control_format == "json" || m.start.control_format == "plain-text", "control format '%s'",
               m.start.control_format.c_str());
    FUZZ_CHECK(!m.start.encoding.empty() && m.start.encoding.size() <= server::kMaxAsteriskFieldBytes,
               "format of %zu bytes", m.start.encoding.size());
    FUZZ_CHECK(m.start.stream_sid.size() <= server::kMaxAsteriskFieldBytes &&
                   m.start.call_sid.size() <= server::kMaxAsteriskFieldBytes,
               "ids of %zu/%zu bytes", m.start.stream_sid.size(), m.start.call_sid.size());
    FUZZ_CHECK(m.start.custom_parameters.size() <= server::kMaxAsteriskVariables, "%zu variables",
               m.start.custom_parameters.size());
  }
  if (m.event == server::StreamEvent::kDtmf) FUZZ_CHECK(m.digit.size() == 1, "digit '%s'", m.digit.c_str());
  if (m.event == server::StreamEvent::kMark) {
    FUZZ_CHECK(m.mark_name.size() <= server::kMaxAsteriskFieldBytes, "mark of %zu bytes", m.mark_name.size());
  }
  if (m.event == server::StreamEvent::kError) {
    FUZZ_CHECK(is_utf8(m.report) && m.report.size() < 4 * server::kMaxAsteriskReportBytes, "report of %zu bytes",
               m.report.size());
  }
  const auto command = nlohmann::json::parse(server::asterisk_stop_buffering(input, true), nullptr, false);
  FUZZ_CHECK(command.is_object() && command["correlation_id"].is_string(), "a JSON command that is not JSON");
  return 0;
}
