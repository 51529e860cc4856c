#include "server/control_message.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include "server/peer_json.h"

namespace brisvox::server {

ControlMessage parse_control_message(std::string_view text) {
  ControlMessage m;
  const nlohmann::json j = parse_peer_json(text).value;
  if (j.is_discarded()) {
    m.error =
        "control message is not valid JSON; send {\"type\":\"flush\"}, {\"type\":\"reset\"} or {\"type\":\"close\"}";
    return m;
  }
  if (!j.is_object()) {
    m.error = "control message must be a JSON object with a \"type\"";
    return m;
  }
  const auto it = j.find("type");
  if (it == j.end() || !it->is_string()) {
    m.error = "control message has no string \"type\"; use flush, reset or close";
    return m;
  }
  const auto& type = it->get_ref<const std::string&>();
  if (type == "flush") {
    m.type = ControlType::kFlush;
  } else if (type == "reset") {
    m.type = ControlType::kReset;
  } else if (type == "close") {
    m.type = ControlType::kClose;
  } else {
    std::string shown = type.size() > 64 ? type.substr(0, 64) + "..." : type;
    m.error = fmt::format("unknown control message type {}; use flush, reset or close",
                          nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return m;
  }
  m.ok = true;
  return m;
}

}  // namespace brisvox::server
