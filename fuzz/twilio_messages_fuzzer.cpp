// The Twilio Media Streams reader (server/twilio_messages.h) on arbitrary input, and base64 under
// it. Invariants: never throws; ok exactly when there is no error text; an error text is valid
// UTF-8 of bounded length (it goes into a log line); an accepted message is a JSON object whose
// "event" is the one returned (or an unknown one), its ids and parameters within their bounds, a
// media payload the base64 of media.payload; base64 decode(encode(x)) == x.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_utf8.h"
#include "server/base64.h"
#include "server/twilio_messages.h"

namespace {

namespace server = brisvox::server;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::string round = server::base64_encode(input);
  const auto back = server::base64_decode(round);
  FUZZ_CHECK(back.has_value() && *back == input, "base64 round trip of %zu bytes", size);
  if (const auto decoded = server::base64_decode(input)) {
    FUZZ_CHECK(server::base64_encode(*decoded) == input, "base64 accepted a non-canonical text");
  }

  server::TwilioMessage m;
  try {
    m = server::parse_twilio_message(input);
  } catch (...) {
    FUZZ_CHECK(false, "parse_twilio_message threw");
  }
  FUZZ_CHECK(m.ok == m.error.empty(), "ok=%d with error '%s'", m.ok, m.error.c_str());
  if (!m.ok) {
    FUZZ_CHECK(is_utf8(m.error), "the error text is not valid UTF-8");
    FUZZ_CHECK(m.error.size() < 1024, "error text of %zu bytes", m.error.size());
    return 0;
  }
  const auto j = nlohmann::json::parse(input, nullptr, false);
  FUZZ_CHECK(j.is_object() && j.contains("event") && j["event"].is_string(), "accepted without an event");
  const std::string event = j["event"];
  FUZZ_CHECK(m.event == server::TwilioEvent::kUnknown || event == server::to_string(m.event), "event %s as %s",
             event.c_str(), std::string(server::to_string(m.event)).c_str());
  FUZZ_CHECK(m.stream_sid.size() <= server::kMaxTwilioIdBytes, "streamSid of %zu bytes", m.stream_sid.size());
  if (m.event == server::TwilioEvent::kStart) {
    FUZZ_CHECK(!m.start.stream_sid.empty() && m.start.stream_sid == m.stream_sid, "start without its streamSid");
    FUZZ_CHECK(m.start.custom_parameters.size() <= server::kMaxTwilioParameters, "%zu parameters",
               m.start.custom_parameters.size());
  }
  if (m.event == server::TwilioEvent::kMedia) {
    const auto payload = server::base64_decode(j["media"]["payload"].get<std::string>());
    FUZZ_CHECK(payload && *payload == m.payload, "media payload differs from its base64");
  }
  if (m.event == server::TwilioEvent::kDtmf) FUZZ_CHECK(m.digit.size() == 1, "digit '%s'", m.digit.c_str());
  if (m.event == server::TwilioEvent::kMark) {
    FUZZ_CHECK(m.mark_name.size() <= server::kMaxTwilioMarkBytes, "mark name of %zu bytes", m.mark_name.size());
  }
  return 0;
}
