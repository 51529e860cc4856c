#include "server/twilio_messages.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "server/base64.h"
#include "server/peer_json.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

using Json = nlohmann::json;

std::string read_twilio_start(const Json& j, TwilioStart& s) {
  std::string e;
  const Json* start = object_field(j, "start", e);
  if (start == nullptr) return e;
  if (!(e = read_string(*start, "streamSid", s.stream_sid, kMaxTwilioIdBytes, true, "start")).empty()) return e;
  if (s.stream_sid.empty()) return "start.streamSid is empty";
  if (!(e = read_string(*start, "accountSid", s.account_sid, kMaxTwilioIdBytes, false, "start")).empty()) return e;
  if (!(e = read_string(*start, "callSid", s.call_sid, kMaxTwilioIdBytes, false, "start")).empty()) return e;
  if (const auto tracks = start->find("tracks"); tracks != start->end()) {
    if (!tracks->is_array() || tracks->size() > 4) return "start.tracks must be an array of at most 4 strings";
    for (const Json& t : *tracks) {
      if (!t.is_string() || t.get_ref<const std::string&>().size() > kMaxTwilioIdBytes) {
        return "start.tracks must be an array of short strings";
      }
      s.tracks.push_back(t.get<std::string>());
    }
  }
  if (!(e = read_parameters(*start, "customParameters", kMaxTwilioParameters, kMaxTwilioParameterBytes,
                            s.custom_parameters, "start")).empty()) {
    return e;
  }
  const Json* format = object_field(*start, "mediaFormat", e);
  if (format == nullptr) return "start has no \"mediaFormat\" object";
  if (!(e = read_string(*format, "encoding", s.encoding, kMaxTwilioIdBytes, true, "start.mediaFormat")).empty()) {
    return e;
  }
  if (!(e = read_count(*format, "sampleRate", s.sample_rate_hz, "start.mediaFormat")).empty()) return e;
  if (!(e = read_count(*format, "channels", s.channels, "start.mediaFormat")).empty()) return e;
  return {};
}

std::string read_twilio_event(const Json& j, TwilioMessage& m) {
  std::string e;
  switch (m.event) {
    case TwilioEvent::kConnected:
    case TwilioEvent::kError:    // not Twilio's: never read as one
    case TwilioEvent::kCleared:  // nor this
    case TwilioEvent::kUnknown:
      return {};
    case TwilioEvent::kStart:
      if (!(e = read_twilio_start(j, m.start)).empty()) return e;
      if (!m.stream_sid.empty() && m.stream_sid != m.start.stream_sid) {
        return "the start message's streamSid and start.streamSid differ";
      }
      m.stream_sid = m.start.stream_sid;
      return {};
    case TwilioEvent::kMedia: {
      const Json* media = object_field(j, "media", e);
      if (media == nullptr) return e;
      if (!(e = read_string(*media, "track", m.track, kMaxTwilioIdBytes, false, "media")).empty()) return e;
      if (!(e = check_counter(*media, "chunk", "media")).empty()) return e;
      if (!(e = check_counter(*media, "timestamp", "media")).empty()) return e;
      const auto payload = media->find("payload");
      if (payload == media->end() || !payload->is_string()) return "a media message needs media.payload (base64)";
      auto audio = base64_decode(payload->get_ref<const std::string&>());
      if (!audio) return "media.payload is not valid base64";
      m.payload = std::move(*audio);
      return {};
    }
    case TwilioEvent::kDtmf: {
      const Json* dtmf = object_field(j, "dtmf", e);
      if (dtmf == nullptr) return e;
      if (!(e = read_string(*dtmf, "track", m.track, kMaxTwilioIdBytes, false, "dtmf")).empty()) return e;
      if (!(e = read_string(*dtmf, "digit", m.digit, 8, true, "dtmf")).empty()) return e;
      if (m.digit.size() != 1 || std::string_view("0123456789*#ABCD").find(m.digit[0]) == std::string_view::npos) {
        return "dtmf.digit must be one of 0-9, *, #, A-D";
      }
      return {};
    }
    case TwilioEvent::kMark: {
      const Json* mark = object_field(j, "mark", e);
      if (mark == nullptr) return e;
      return read_string(*mark, "name", m.mark_name, kMaxTwilioMarkBytes, true, "mark");
    }
    case TwilioEvent::kStop:
      // stop.accountSid and stop.callSid repeat the start's; nothing else is needed to end.
      if (const auto stop = j.find("stop"); stop != j.end() && !stop->is_object()) return "stop must be an object";
      return {};
  }
  return {};
}

}  // namespace

TwilioMessage parse_twilio_message(std::string_view json_text) {
  TwilioMessage m;
  PeerJson parsed = parse_peer_json(json_text);
  if (!parsed.error.empty()) {
    // The parser's message quotes the peer's bytes.
    m.error = printable("not JSON: " + parsed.error.substr(0, 200));
    return m;
  }
  const Json& j = parsed.value;
  const auto event = j.is_object() ? j.find("event") : j.end();
  if (!j.is_object() || event == j.end() || !event->is_string() ||
      event->get_ref<const std::string&>().size() > kMaxTwilioIdBytes) {
    m.error = "a message must be a JSON object with an \"event\" (a short string)";
    return m;
  }
  m.event_name = event->get<std::string>();
  for (TwilioEvent e : {TwilioEvent::kConnected, TwilioEvent::kStart, TwilioEvent::kMedia, TwilioEvent::kDtmf,
                        TwilioEvent::kMark, TwilioEvent::kStop}) {
    if (m.event_name == to_string(e)) m.event = e;
  }
  std::string error = read_string(j, "streamSid", m.stream_sid, kMaxTwilioIdBytes, false, "the message");
  if (error.empty()) error = check_counter(j, "sequenceNumber", "the message");
  if (error.empty()) error = read_twilio_event(j, m);
  if (!error.empty()) {
    // The event name is the peer's.
    m.error = printable(
        fmt::format("a {} message: {}", m.event == TwilioEvent::kUnknown ? "Twilio" : m.event_name, error));
    return m;
  }
  m.ok = true;
  return m;
}

std::string check_media_format(const TwilioStart& start) {
  if (start.encoding == "audio/x-mulaw" && start.sample_rate_hz == 8000 && start.channels == 1) return {};
  return fmt::format("start.mediaFormat is {} at {} Hz, {} channel(s); brisvox takes Twilio's audio/x-mulaw at 8000 Hz "
                     "mono",
                     json_quoted(start.encoding), start.sample_rate_hz, start.channels);
}

std::string twilio_media_message(std::string_view stream_sid, std::string_view mulaw) {
  return fmt::format(R"({{"event":"media","streamSid":{},"media":{{"payload":"{}"}}}})", json_quoted(stream_sid),
                     base64_encode(mulaw));
}

std::string twilio_mark_message(std::string_view stream_sid, std::string_view name) {
  return fmt::format(R"({{"event":"mark","streamSid":{},"mark":{{"name":{}}}}})", json_quoted(stream_sid), json_quoted(name));
}

std::string twilio_clear_message(std::string_view stream_sid) {
  return fmt::format(R"({{"event":"clear","streamSid":{}}})", json_quoted(stream_sid));
}

}  // namespace brisvox::server
