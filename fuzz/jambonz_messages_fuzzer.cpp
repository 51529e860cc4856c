// jambonz's listen-verb reader (server/jambonz_messages.h) on arbitrary input, read both as a
// preamble and as a later message. Invariants: never throws; ok exactly when there is no error
// text; an error text is valid UTF-8 of bounded length (it goes into a log line); an accepted
// preamble is a JSON object with a positive whole sampleRate, its keys within their bounds and
// never sampleRate or mixType; an accepted message has a type or an event, a dtmf one digit, a
// mark a bounded name; what brisvox writes back is JSON that carries what it was given.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_stream_message.h"
#include "server/jambonz_messages.h"

namespace server = brisvox::server;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  server::StreamMessage preamble;
  server::StreamMessage message;
  try {
    preamble = server::parse_jambonz_preamble(input);
    message = server::parse_jambonz_message(input);
  } catch (...) {
    FUZZ_CHECK(false, "a jambonz reader threw");
  }
  check_stream_error(preamble);
  check_stream_error(message);
  const auto j = nlohmann::json::parse(input, nullptr, false);
  if (preamble.ok) {
    FUZZ_CHECK(j.is_object() && j.contains("sampleRate"), "a preamble accepted without sampleRate");
    FUZZ_CHECK(preamble.event == server::StreamEvent::kStart, "a preamble that is not a start");
    FUZZ_CHECK(preamble.start.sample_rate_hz > 0, "rate %d", preamble.start.sample_rate_hz);
    FUZZ_CHECK(preamble.start.channels == 1 || preamble.start.channels == 2, "%d channels", preamble.start.channels);
    FUZZ_CHECK(preamble.start.custom_parameters.size() <= server::kMaxJambonzParameters, "%zu keys",
               preamble.start.custom_parameters.size());
    for (const auto& [name, value] : preamble.start.custom_parameters) {
      FUZZ_CHECK(name != "sampleRate" && name != "mixType", "key %s", name.c_str());
      FUZZ_CHECK(name.size() <= server::kMaxJambonzParameterBytes && value.size() <= server::kMaxJambonzParameterBytes,
                 "a key of %zu/%zu bytes", name.size(), value.size());
    }
    FUZZ_CHECK(preamble.start.call_sid.size() <= server::kMaxJambonzFieldBytes, "callSid of %zu bytes",
               preamble.start.call_sid.size());
  }
  if (message.ok) {
    FUZZ_CHECK(j.is_object() && (j.contains("type") || j.contains("event")), "accepted without a type or event");
    if (message.event == server::StreamEvent::kDtmf) {
      FUZZ_CHECK(message.digit.size() == 1, "digit '%s'", message.digit.c_str());
    }
    if (message.event == server::StreamEvent::kMark) {
      FUZZ_CHECK(message.mark_name.size() <= server::kMaxJambonzMarkBytes, "mark name of %zu bytes",
                 message.mark_name.size());
    }
    FUZZ_CHECK(message.event != server::StreamEvent::kStart, "a later message read as a start");
  }
  // What brisvox writes back carries any bytes as valid JSON (a mark's name is ours, but bounded
  // by nothing here).
  const auto mark = nlohmann::json::parse(server::jambonz_mark_message(input), nullptr, false);
  FUZZ_CHECK(mark.is_object() && mark["type"] == "mark" && mark["data"]["name"].is_string(),
             "a mark message that is not JSON");
  return 0;
}
