#include "server/call_app_messages.h"

#include <nlohmann/json.hpp>

#include "server/peer_json.h"

namespace brisvox::server {
namespace {

using OrderedJson = nlohmann::ordered_json;

std::string dump(const OrderedJson& j) { return j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace); }

constexpr std::string_view kKinds = "speak, cancel, mark or hangup";

}  // namespace

std::string call_start_message(const CallStartInfo& info) {
  OrderedJson j;
  j["type"] = "call_start";
  j["provider"] = info.provider;
  j["call_id"] = info.call_id;
  j["stream_id"] = info.stream_id;
  if (!info.account_id.empty()) j["account_id"] = info.account_id;
  j["session_id"] = info.session_id;
  j["listen_only"] = info.listen_only;
  j["parameters"] = OrderedJson::object();
  if (info.parameters != nullptr) {
    for (const auto& [name, value] : *info.parameters) j["parameters"][name] = value;
  }
  return dump(j);
}

std::string dtmf_message(std::string_view digit) { return dump(OrderedJson{{"type", "dtmf"}, {"digit", digit}}); }

std::string call_end_message(std::string_view reason, std::string_view detail) {
  OrderedJson j{{"type", "call_end"}, {"reason", reason}};
  if (!detail.empty()) j["detail"] = detail;
  return dump(j);
}

AppMessage parse_app_message(std::string_view json_text) {
  AppMessage m;
  const PeerJson parsed = parse_peer_json(json_text);
  const nlohmann::json& j = parsed.value;
  const auto type = j.is_object() ? j.find("type") : j.end();
  if (!parsed.error.empty() || !j.is_object() || type == j.end() || !type->is_string()) {
    m.error = std::string("a message must be a JSON object with a \"type\": ") + std::string(kKinds);
    return m;
  }
  const auto& t = type->get_ref<const std::string&>();
  if (t == "hangup") {
    m.type = AppMessageType::kHangup;
    m.ok = true;
    return m;
  }
  if (t == "close") {  // /v1/call's word: on a telephony call the application hangs up
    m.error = "unknown message type 'close': a call's application sends " + std::string(kKinds);
    return m;
  }
  m.call = parse_call_message(json_text);
  if (!m.call.ok) {
    m.error = m.call.error;
    // /v1/call's own list of types names close; the application's has hangup.
    if (const auto at = m.error.find("speak, cancel, mark or close"); at != std::string::npos) {
      m.error.replace(at, 28, kKinds);
    }
    return m;
  }
  switch (m.call.type) {
    case CallMessageType::kSpeak: m.type = AppMessageType::kSpeak; break;
    case CallMessageType::kCancel: m.type = AppMessageType::kCancel; break;
    case CallMessageType::kMark: m.type = AppMessageType::kMark; break;
    case CallMessageType::kClose: break;  // answered above
  }
  m.ok = true;
  return m;
}

}  // namespace brisvox::server
