// The Telnyx media streaming reader (server/telnyx_messages.h) on arbitrary input. Invariants:
// never throws; ok exactly when there is no error text; an error text, and an error frame's report,
// is valid UTF-8 of bounded length (it goes into a log line); an accepted message is a JSON object
// whose "event" is the one returned (or an unknown one), its ids, parameters and token within their
// bounds, a start's stream id the message's, a media payload the base64 of media.payload; what
// brisvox writes back is JSON that carries what it was given.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_utf8.h"
#include "server/base64.h"
#include "server/telnyx_messages.h"

namespace {

namespace server = brisvox::server;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  server::StreamMessage m;
  try {
    m = server::parse_telnyx_message(input);
  } catch (...) {
    FUZZ_CHECK(false, "parse_telnyx_message threw");
  }
  FUZZ_CHECK(m.ok == m.error.empty(), "ok=%d with error '%s'", m.ok, m.error.c_str());
  if (!m.ok) {
    FUZZ_CHECK(is_utf8(m.error), "the error text is not valid UTF-8");
    FUZZ_CHECK(m.error.size() < 1024, "error text of %zu bytes", m.error.size());
  } else {
    const auto j = nlohmann::json::parse(input, nullptr, false);
    FUZZ_CHECK(j.is_object() && j.contains("event") && j["event"].is_string(), "accepted without an event");
    const std::string event = j["event"];
    FUZZ_CHECK(m.event == server::StreamEvent::kUnknown || event == server::to_string(m.event), "event %s as %s",
               event.c_str(), std::string(server::to_string(m.event)).c_str());
    FUZZ_CHECK(m.stream_sid.size() <= server::kMaxTelnyxIdBytes, "stream_id of %zu bytes", m.stream_sid.size());
    FUZZ_CHECK(m.auth_token.size() <= server::kMaxTelnyxParameterBytes, "token of %zu bytes", m.auth_token.size());
    if (m.event == server::StreamEvent::kStart) {
      FUZZ_CHECK(!m.stream_sid.empty() && m.start.stream_sid == m.stream_sid, "start without its stream_id");
      FUZZ_CHECK(m.start.custom_parameters.size() <= server::kMaxTelnyxParameters, "%zu parameters",
                 m.start.custom_parameters.size());
      FUZZ_CHECK(m.start.sample_rate_hz >= 0 && m.start.channels >= 0, "a negative rate or channel count");
    }
    if (m.event == server::StreamEvent::kMedia) {
      const auto payload = server::base64_decode(j["media"]["payload"].get<std::string>());
      FUZZ_CHECK(payload && *payload == m.payload, "media payload differs from its base64");
    }
    if (m.event == server::StreamEvent::kDtmf) FUZZ_CHECK(m.digit.size() == 1, "digit '%s'", m.digit.c_str());
    if (m.event == server::StreamEvent::kMark) {
      FUZZ_CHECK(m.mark_name.size() <= server::kMaxTelnyxMarkBytes, "mark name of %zu bytes", m.mark_name.size());
    }
    if (m.event == server::StreamEvent::kError) {
      FUZZ_CHECK(is_utf8(m.report) && m.report.size() < 4 * server::kMaxTelnyxReportBytes, "report of %zu bytes",
                 m.report.size());
    }
  }
  // What brisvox writes back carries any bytes as valid JSON (a mark's name is the application's).
  const auto mark = nlohmann::json::parse(server::telnyx_mark_message(input), nullptr, false);
  FUZZ_CHECK(mark.is_object() && mark["mark"]["name"].is_string(), "a mark message that is not JSON");
  const auto media = nlohmann::json::parse(server::telnyx_media_message(input), nullptr, false);
  const auto back = server::base64_decode(media["media"]["payload"].get<std::string>());
  FUZZ_CHECK(back && *back == input, "a media message that does not carry its audio");
  return 0;
}
