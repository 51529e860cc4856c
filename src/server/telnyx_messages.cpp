#include "server/telnyx_messages.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <utility>
#include <vector>

#include "server/base64.h"
#include "server/peer_json.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

using Json = nlohmann::json;

// start.custom_parameters: an object of strings (as a TeXML <Stream>'s <Parameter>s read), or the
// array of {name, value} that Call Control's streaming_start takes: Telnyx's pages do not show the
// start frame's shape of it, so either is read.
std::string read_custom_parameters(const Json& start, std::vector<std::pair<std::string, std::string>>& out) {
  const auto params = start.find("custom_parameters");
  if (params == start.end() || !params->is_array()) {
    return read_parameters(start, "custom_parameters", kMaxTelnyxParameters, kMaxTelnyxParameterBytes, out, "start");
  }
  if (params->size() > kMaxTelnyxParameters) {
    return fmt::format("start.custom_parameters has more than {} entries", kMaxTelnyxParameters);
  }
  for (const Json& p : *params) {
    std::string name, value, e;
    if (!p.is_object()) return "start.custom_parameters must be an object or an array of {name, value}";
    if (!(e = read_string(p, "name", name, kMaxTelnyxParameterBytes, true, "start.custom_parameters[]")).empty() ||
        !(e = read_string(p, "value", value, kMaxTelnyxParameterBytes, true, "start.custom_parameters[]")).empty()) {
      return e;
    }
    out.emplace_back(std::move(name), std::move(value));
  }
  return {};
}

std::string read_telnyx_start(const Json& j, StreamStart& s) {
  std::string e;
  const Json* start = object_field(j, "start", e);
  if (start == nullptr) return e;
  if (!(e = read_string(*start, "call_control_id", s.call_sid, kMaxTelnyxIdBytes, false, "start")).empty()) return e;
  if (!(e = read_string(*start, "user_id", s.account_sid, kMaxTelnyxIdBytes, false, "start")).empty()) return e;
  if (!(e = read_custom_parameters(*start, s.custom_parameters)).empty()) return e;
  const Json* format = object_field(*start, "media_format", e);
  if (format == nullptr) return "start has no \"media_format\" object";
  if (!(e = read_string(*format, "encoding", s.encoding, kMaxTelnyxIdBytes, true, "start.media_format")).empty()) {
    return e;
  }
  if (!(e = read_count(*format, "sample_rate", s.sample_rate_hz, "start.media_format")).empty()) return e;
  // Telnyx's example carries channels; a start without it is taken as mono.
  if (format->contains("channels")) return read_count(*format, "channels", s.channels, "start.media_format");
  s.channels = 1;
  return {};
}

std::string read_telnyx_event(const Json& j, StreamMessage& m) {
  std::string e;
  switch (m.event) {
    case StreamEvent::kConnected:
      return read_string(j, "x-telnyx-streaming-auth-token", m.auth_token, kMaxTelnyxParameterBytes, false,
                         "connected");
    case StreamEvent::kCleared:  // not Telnyx's: never read as one
    case StreamEvent::kUnknown:
      return {};
    case StreamEvent::kStart:
      if (m.stream_sid.empty()) return "a start message needs a stream_id";
      if (!(e = read_telnyx_start(j, m.start)).empty()) return e;
      m.start.stream_sid = m.stream_sid;
      return {};
    case StreamEvent::kMedia: {
      const Json* media = object_field(j, "media", e);
      if (media == nullptr) return e;
      if (!(e = read_string(*media, "track", m.track, kMaxTelnyxIdBytes, false, "media")).empty()) return e;
      if (!(e = check_counter(*media, "chunk", "media")).empty()) return e;
      if (!(e = check_counter(*media, "timestamp", "media")).empty()) return e;
      const auto payload = media->find("payload");
      if (payload == media->end() || !payload->is_string()) return "a media message needs media.payload (base64)";
      auto audio = base64_decode(payload->get_ref<const std::string&>());
      if (!audio) return "media.payload is not valid base64";
      m.payload = std::move(*audio);
      return {};
    }
    case StreamEvent::kDtmf: {
      const Json* dtmf = object_field(j, "dtmf", e);
      if (dtmf == nullptr) return e;
      if (!(e = read_string(*dtmf, "digit", m.digit, 8, true, "dtmf")).empty()) return e;
      if (m.digit.size() != 1 || std::string_view("0123456789*#ABCD").find(m.digit[0]) == std::string_view::npos) {
        return "dtmf.digit must be one of 0-9, *, #, A-D";
      }
      return {};
    }
    case StreamEvent::kMark: {
      const Json* mark = object_field(j, "mark", e);
      if (mark == nullptr) return e;
      return read_string(*mark, "name", m.mark_name, kMaxTelnyxMarkBytes, true, "mark");
    }
    case StreamEvent::kError: {
      // Its fields are Telnyx's to add to: the whole frame, bounded, is the log's.
      std::string text = j.dump(-1, ' ', false, Json::error_handler_t::replace);
      if (text.size() > kMaxTelnyxReportBytes) text = text.substr(0, kMaxTelnyxReportBytes) + "...";
      m.report = printable(text);
      return {};
    }
    case StreamEvent::kStop:
      // stop.user_id and stop.call_control_id repeat the start's; nothing else is needed to end.
      if (const auto stop = j.find("stop"); stop != j.end() && !stop->is_object()) return "stop must be an object";
      return {};
  }
  return {};
}

}  // namespace

StreamMessage parse_telnyx_message(std::string_view json_text) {
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
      event->get_ref<const std::string&>().size() > kMaxTelnyxIdBytes) {
    m.error = "a message must be a JSON object with an \"event\" (a short string)";
    return m;
  }
  m.event_name = event->get<std::string>();
  for (StreamEvent e : {StreamEvent::kConnected, StreamEvent::kStart, StreamEvent::kMedia, StreamEvent::kDtmf,
                        StreamEvent::kMark, StreamEvent::kError, StreamEvent::kStop}) {
    if (m.event_name == to_string(e)) m.event = e;
  }
  std::string error = read_string(j, "stream_id", m.stream_sid, kMaxTelnyxIdBytes, false, "the message");
  if (error.empty()) error = check_counter(j, "sequence_number", "the message");
  if (error.empty()) error = read_telnyx_event(j, m);
  if (!error.empty()) {
    // The event name is the peer's.
    m.error = printable(
        fmt::format("a {} message: {}", m.event == StreamEvent::kUnknown ? "Telnyx" : m.event_name, error));
    return m;
  }
  m.ok = true;
  return m;
}

std::string_view telnyx_call_encoding(std::string_view codec) {
  if (codec == "PCMU") return "mulaw";
  if (codec == "PCMA") return "alaw";
  if (codec == "L16") return "pcm_s16le";
  return {};
}

std::string swap_l16(std::string_view pcm) {
  std::string out(pcm.size() / 2 * 2, '\0');
  for (std::size_t i = 0; i + 1 < pcm.size(); i += 2) {
    out[i] = pcm[i + 1];
    out[i + 1] = pcm[i];
  }
  return out;
}

std::string check_telnyx_media_format(const StreamStart& start, const TelnyxFormat& expected) {
  if (start.encoding == expected.codec && start.sample_rate_hz == expected.sample_rate_hz && start.channels == 1) {
    return {};
  }
  return fmt::format("start.media_format is {} at {} Hz, {} channel(s); this stream takes {} at {} Hz mono (set "
                     "the codec and rate of the Telnyx stream and of the stream_url's ?codec=&rate= to match)",
                     json_quoted(start.encoding), start.sample_rate_hz, start.channels, expected.codec,
                     expected.sample_rate_hz);
}

std::string telnyx_media_message(std::string_view audio) {
  return fmt::format(R"({{"event":"media","media":{{"payload":"{}"}}}})", base64_encode(audio));
}

std::string telnyx_mark_message(std::string_view name) {
  return fmt::format(R"({{"event":"mark","mark":{{"name":{}}}}})", json_quoted(name));
}

std::string telnyx_clear_message() { return R"({"event":"clear"})"; }

}  // namespace brisvox::server
