// The Vonage Voice API WebSocket reader (server/vonage_messages.h) on arbitrary input. Invariants:
// never throws; ok exactly when there is no error text; an error text is valid UTF-8 of bounded
// length (it goes into a log line); an accepted message is a JSON object whose "event" is the one
// returned (or an unknown one), websocket:connected's headers within their bounds and never its
// event or content-type, a mark's name within its bound; the content-type's rate is positive or 0;
// what brisvox writes back is JSON that carries what it was given.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_utf8.h"
#include "server/vonage_messages.h"

namespace {

namespace server = brisvox::server;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  server::StreamMessage m;
  try {
    m = server::parse_vonage_message(input);
  } catch (...) {
    FUZZ_CHECK(false, "parse_vonage_message threw");
  }
  FUZZ_CHECK(m.ok == m.error.empty(), "ok=%d with error '%s'", m.ok, m.error.c_str());
  if (!m.ok) {
    FUZZ_CHECK(is_utf8(m.error), "the error text is not valid UTF-8");
    FUZZ_CHECK(m.error.size() < 1024, "error text of %zu bytes", m.error.size());
  } else {
    const auto j = nlohmann::json::parse(input, nullptr, false);
    FUZZ_CHECK(j.is_object() && j.contains("event") && j["event"].is_string(), "accepted without an event");
    FUZZ_CHECK(j["event"].get<std::string>() == m.event_name, "event name differs");
    FUZZ_CHECK(m.stream_sid.empty(), "a stream id from Vonage");
    if (m.event == server::StreamEvent::kStart) {
      FUZZ_CHECK(m.event_name == "websocket:connected", "start from %s", m.event_name.c_str());
      FUZZ_CHECK(m.start.custom_parameters.size() <= server::kMaxVonageParameters, "%zu headers",
                 m.start.custom_parameters.size());
      for (const auto& [name, value] : m.start.custom_parameters) {
        FUZZ_CHECK(name != "event" && name != "content-type", "header %s", name.c_str());
        FUZZ_CHECK(name.size() <= server::kMaxVonageParameterBytes && value.size() <= server::kMaxVonageParameterBytes,
                   "a header of %zu/%zu bytes", name.size(), value.size());
      }
      FUZZ_CHECK(m.start.sample_rate_hz >= 0 && m.start.channels == 1, "rate %d, %d channels",
                 m.start.sample_rate_hz, m.start.channels);
    }
    if (m.event == server::StreamEvent::kDtmf) FUZZ_CHECK(m.digit.size() == 1, "digit '%s'", m.digit.c_str());
    if (m.event == server::StreamEvent::kMark) {
      FUZZ_CHECK(m.mark_name.size() <= server::kMaxVonageMarkBytes, "mark name of %zu bytes", m.mark_name.size());
    }
  }
  FUZZ_CHECK(server::vonage_l16_rate(input) >= 0, "a negative rate");
  // What brisvox writes back carries any bytes as valid JSON (a mark's name is ours, but bounded
  // by nothing here).
  const auto notify = nlohmann::json::parse(server::vonage_notify_message(input), nullptr, false);
  FUZZ_CHECK(notify.is_object() && notify["action"] == "notify" && notify["payload"]["name"].is_string(),
             "a notify message that is not JSON");
  return 0;
}
