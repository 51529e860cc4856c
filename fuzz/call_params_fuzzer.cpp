// The parsers of /v1/call (server/call_params.h) on arbitrary input: the first byte picks one,
// the rest is its input.
//   - parse_call_message (a client's JSON message): never throws; ok exactly when there is no
//     error text; an accepted message is a JSON object whose "type" names the returned type, a
//     speak's id is the JSON of a short string or an integer, a mark's name at most 256 bytes; an
//     error text is valid UTF-8 of bounded length (it goes back inside a JSON error message).
//   - parse_app_message (a telephony call's application, server/call_app_messages.h), on the same
//     input: never throws; ok exactly when there is no error text (valid UTF-8, bounded); hangup
//     only for {"type":"hangup"}; "close" never accepted; otherwise what parse_call_message says.
//   - parse_call_request (the upgrade's query): fails only with kInvalidArgument; what it accepts
//     is a valid StreamConfig, a barge-in minimum and a playout lead within their ranges, and
//     barge_in_on=turn_end only with a turn stage.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "brisvox/error.h"
#include "fuzz_check.h"
#include "fuzz_utf8.h"
#include "server/call_app_messages.h"
#include "server/call_params.h"

namespace {

namespace server = brisvox::server;
using server::CallMessageType;

std::string_view name_of(CallMessageType type) {
  switch (type) {
    case CallMessageType::kSpeak: return "speak";
    case CallMessageType::kCancel: return "cancel";
    case CallMessageType::kMark: return "mark";
    case CallMessageType::kClose: return "close";
  }
  return "?";
}

// ok exactly when there is no error text, which goes back to a client inside JSON: valid UTF-8,
// bounded. Whether the message was accepted.
bool accepted(bool ok, const std::string& error) {
  FUZZ_CHECK(ok == error.empty(), "ok=%d with error '%s'", ok, error.c_str());
  if (!ok) {
    FUZZ_CHECK(is_utf8(error), "the error text is not valid UTF-8");
    FUZZ_CHECK(error.size() < 512, "error text of %zu bytes", error.size());
  }
  return ok;
}

void check_message(std::string_view text) {
  server::CallMessage m;
  try {
    m = server::parse_call_message(text);
  } catch (...) {
    FUZZ_CHECK(false, "parse_call_message threw");
  }
  if (!accepted(m.ok, m.error)) return;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  FUZZ_CHECK(j.is_object() && j.contains("type") && j["type"] == name_of(m.type), "accepted as %s",
             std::string(name_of(m.type)).c_str());
  if (m.type == CallMessageType::kSpeak && !m.id.empty()) {
    const auto id = nlohmann::json::parse(m.id, nullptr, false);
    FUZZ_CHECK((id.is_string() && id.get_ref<const std::string&>().size() <= 256) || id.is_number_integer(),
               "speak id %s", m.id.c_str());
  }
  if (m.type == CallMessageType::kMark) FUZZ_CHECK(m.name.size() <= 256, "mark name of %zu bytes", m.name.size());
}

void check_app_message(std::string_view text) {
  server::AppMessage m;
  try {
    m = server::parse_app_message(text);
  } catch (...) {
    FUZZ_CHECK(false, "parse_app_message threw");
  }
  if (!accepted(m.ok, m.error)) return;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  FUZZ_CHECK(j.is_object() && j.contains("type") && j["type"] != "close", "accepted a close or a non-object");
  if (m.type == server::AppMessageType::kHangup) {
    FUZZ_CHECK(j["type"] == "hangup", "hangup from another type");
  } else {
    FUZZ_CHECK(m.call.ok, "accepted what parse_call_message refused: %s", m.call.error.c_str());
  }
}

void check_request(std::string_view query) {
  server::CallRequest r;
  try {
    r = server::parse_call_request(query);
  } catch (const brisvox::Error& e) {
    FUZZ_CHECK(e.code() == brisvox::ErrorCode::kInvalidArgument, "%s", e.what());
    return;
  }
  try {
    r.audio.stream.validate();
  } catch (const brisvox::Error& e) {
    FUZZ_CHECK(false, "accepted an invalid stream: %s", e.what());
  }
  FUZZ_CHECK(r.barge_in.min_speech_ms >= 32 && r.barge_in.min_speech_ms <= 10000, "min %d", r.barge_in.min_speech_ms);
  FUZZ_CHECK(r.playout_lead_ms >= 0 && r.playout_lead_ms <= 60000, "lead %d", r.playout_lead_ms);
  FUZZ_CHECK(!r.barge_in.enabled || !r.barge_in.on_turn_end || r.audio.stream.turn.has_value(),
             "turn_end without a turn stage");
  FUZZ_CHECK(r.voice.speech.sample_rate_hz == 0, "a call speaks at its own rate");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    check_request(input);
  } else {
    check_message(input);
    check_app_message(input);
  }
  return 0;
}
