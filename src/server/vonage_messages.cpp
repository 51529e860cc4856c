#include "server/vonage_messages.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <charconv>
#include <optional>
#include <utility>

#include "server/header_value.h"
#include "server/peer_json.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kL16 = "audio/l16";

// websocket:connected: the content-type, and every other top-level key (the NCCO endpoint's
// headers) as a custom parameter; a header that is not a string is kept as its JSON text.
std::string read_vonage_connected(const Json& j, StreamStart& s) {
  std::string e;
  if (!(e = read_string(j, "content-type", s.encoding, kMaxVonageFieldBytes, true, "websocket:connected")).empty()) {
    return e;
  }
  s.sample_rate_hz = vonage_l16_rate(s.encoding);
  s.channels = 1;  // Vonage's WebSocket audio is mono
  s.encoding = media_type(s.encoding);
  for (const auto& [name, value] : j.items()) {
    if (name == "event" || name == "content-type") continue;
    if (s.custom_parameters.size() == kMaxVonageParameters) {
      return fmt::format("websocket:connected has more than {} headers", kMaxVonageParameters);
    }
    std::string text = value.is_string() ? value.get<std::string>()
                                         : value.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (name.size() > kMaxVonageParameterBytes || text.size() > kMaxVonageParameterBytes) {
      return fmt::format("a websocket:connected header name or value is longer than {} bytes",
                         kMaxVonageParameterBytes);
    }
    // The call's uuid is Vonage's name for the call leg (the answer webhook's): an NCCO that puts it
    // in the headers as "uuid" names the call to the application with it.
    if (name == "uuid" && value.is_string() && text.size() <= kMaxVonageFieldBytes) s.call_sid = text;
    s.custom_parameters.emplace_back(name, std::move(text));
  }
  return {};
}

std::string read_vonage_event(const Json& j, StreamMessage& m) {
  std::string e;
  switch (m.event) {
    case StreamEvent::kStart:
      return read_vonage_connected(j, m.start);
    case StreamEvent::kDtmf:
      if (!(e = read_string(j, "digit", m.digit, kMaxVonageFieldBytes, true, "websocket:dtmf")).empty()) return e;
      if (m.digit.size() != 1 || std::string_view("0123456789*#ABCD").find(m.digit[0]) == std::string_view::npos) {
        return "websocket:dtmf's digit must be one of 0-9, *, #, A-D";
      }
      if (const auto d = j.find("duration"); d != j.end() && !d->is_number()) {
        return "websocket:dtmf's duration must be a number";
      }
      return {};
    case StreamEvent::kMark: {
      // The echo of our notify: its payload is ours, {"name": MARK}. Another payload (an object
      // without our name) is not ours: an empty name, which matches none of our marks.
      const auto payload = j.find("payload");
      if (payload == j.end() || !payload->is_object()) return "websocket:notify needs a \"payload\" object";
      return read_string(*payload, "name", m.mark_name, kMaxVonageMarkBytes, false, "websocket:notify's payload");
    }
    default:
      return {};
  }
}

}  // namespace

StreamMessage parse_vonage_message(std::string_view json_text) {
  StreamMessage m;
  PeerJson parsed = parse_peer_json(json_text);
  if (!parsed.error.empty()) {
    // The parser's message quotes the peer's bytes.
    m.error = printable("not JSON: " + parsed.error.substr(0, 200));
    return m;
  }
  const Json& j = parsed.value;
  const auto event = j.is_object() ? j.find("event") : j.end();
  if (!j.is_object() || event == j.end() || !event->is_string() ||
      event->get_ref<const std::string&>().size() > kMaxVonageFieldBytes) {
    m.error = "a message must be a JSON object with an \"event\" (a short string)";
    return m;
  }
  m.event_name = event->get<std::string>();
  if (m.event_name == "websocket:connected") m.event = StreamEvent::kStart;
  if (m.event_name == "websocket:dtmf") m.event = StreamEvent::kDtmf;
  if (m.event_name == "websocket:notify") m.event = StreamEvent::kMark;
  if (m.event_name == "websocket:cleared") m.event = StreamEvent::kCleared;
  if (const std::string error = read_vonage_event(j, m); !error.empty()) {
    // The event name is the peer's.
    m.error = printable(fmt::format("a {} message: {}", m.event == StreamEvent::kUnknown ? "Vonage" : m.event_name,
                                    error));
    return m;
  }
  m.ok = true;
  return m;
}

int vonage_l16_rate(std::string_view content_type) {
  if (media_type(content_type) != kL16) return 0;
  const std::optional<std::string> value = header_param(content_type, "rate");
  if (!value) return 0;
  int rate = 0;
  const auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), rate);
  return ec == std::errc() && end == value->data() + value->size() && rate > 0 && rate <= 192000 ? rate : 0;
}

std::string check_vonage_media_format(const StreamStart& start, int rate_hz) {
  if (start.encoding == kL16 && start.sample_rate_hz == rate_hz) return {};
  return fmt::format("websocket:connected's content-type is {}; this endpoint takes audio/l16;rate={} (set the "
                     "NCCO endpoint's content-type and the uri's ?rate= to match)",
                     json_quoted(start.sample_rate_hz > 0 ? fmt::format("{};rate={}", start.encoding,
                                                                        start.sample_rate_hz)
                                                          : start.encoding),
                     rate_hz);
}

std::string vonage_notify_message(std::string_view name) {
  return fmt::format(R"({{"action":"notify","payload":{{"name":{}}}}})", json_quoted(name));
}

std::string vonage_clear_message() { return R"({"action":"clear"})"; }

}  // namespace brisvox::server
