// Text (JSON) messages a client sends on /v1/stream: {"type":"flush"}, {"type":"reset"},
// {"type":"close"}. Other fields are ignored, so that clients may add their own (an id).
#pragma once

#include <string>
#include <string_view>

namespace brisvox::server {

enum class ControlType { kFlush, kReset, kClose };

struct ControlMessage {
  bool ok = false;
  ControlType type = ControlType::kFlush;
  std::string error;  // !ok: what was wrong, for the "bad_control" error event
};

// Never throws: malformed JSON, a non-object, a missing or unknown "type" give !ok.
ControlMessage parse_control_message(std::string_view text);

}  // namespace brisvox::server
