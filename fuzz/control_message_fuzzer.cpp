// The parser of the JSON control messages a client sends on /v1/stream ({"type":"flush"}, ...)
// on arbitrary text.
//
// Invariants: it never throws; ok exactly when there is no error text; an accepted message is a
// JSON object whose "type" names the returned type; an error text is valid UTF-8 of bounded
// length (it goes back to the client inside a JSON "bad_control" event).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_utf8.h"
#include "server/control_message.h"

namespace {

using brisvox::server::ControlType;

std::string_view name_of(ControlType type) {
  switch (type) {
    case ControlType::kFlush: return "flush";
    case ControlType::kReset: return "reset";
    case ControlType::kClose: return "close";
  }
  return "?";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  brisvox::server::ControlMessage m;
  try {
    m = brisvox::server::parse_control_message(text);
  } catch (...) {
    FUZZ_CHECK(false, "parse_control_message threw");
  }
  FUZZ_CHECK(m.ok == m.error.empty(), "ok=%d with error '%s'", m.ok, m.error.c_str());
  if (m.ok) {
    const auto j = nlohmann::json::parse(text, nullptr, false);
    FUZZ_CHECK(j.is_object() && j.contains("type") && j["type"].is_string() && j["type"] == name_of(m.type),
               "accepted as %s", std::string(name_of(m.type)).c_str());
  } else {
    FUZZ_CHECK(is_utf8(m.error), "the error text is not valid UTF-8");
    FUZZ_CHECK(m.error.size() < 512, "error text of %zu bytes", m.error.size());
  }
  return 0;
}
