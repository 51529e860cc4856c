#include "server/jambonz_messages.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <utility>

#include "server/peer_json.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kJambonzMediaType = "audio/l16";

// The message's JSON object, or why there is none.
const Json* jambonz_object(const PeerJson& parsed, StreamMessage& m) {
  if (!parsed.error.empty()) {
    m.error = printable("not JSON: " + parsed.error.substr(0, 200));  // the parser's text quotes the peer's bytes
    return nullptr;
  }
  if (!parsed.value.is_object()) {
    m.error = "a jambonz message must be a JSON object";
    return nullptr;
  }
  return &parsed.value;
}

// The preamble: sampleRate and mixType, callSid, and every other key (the call's attributes and the
// verb's metadata) as a custom parameter; a value that is not a string is kept as its JSON text.
std::string read_jambonz_preamble(const Json& j, StreamStart& s) {
  const auto rate = j.find("sampleRate");
  if (rate == j.end()) return "the preamble has no \"sampleRate\"";
  // A number, as jambonz writes it; a whole one in range (the verb allows 8000 to 64000).
  if (!rate->is_number() || !(rate->get<double>() > 0 && rate->get<double>() <= 192000) ||
      std::floor(rate->get<double>()) != rate->get<double>()) {
    return "the preamble's \"sampleRate\" must be a whole number of Hz";
  }
  s.sample_rate_hz = static_cast<int>(rate->get<double>());
  s.encoding = std::string(kJambonzMediaType);
  std::string mix = "mono";  // the verb's default
  std::string e;
  if (!(e = read_string(j, "mixType", mix, kMaxJambonzFieldBytes, false, "the preamble")).empty()) return e;
  s.tracks = {mix};
  s.channels = mix == "stereo" ? 2 : 1;
  if (!(e = read_string(j, "callSid", s.call_sid, kMaxJambonzFieldBytes, false, "the preamble")).empty()) return e;
  if (!(e = read_string(j, "accountSid", s.account_sid, kMaxJambonzFieldBytes, false, "the preamble")).empty()) {
    return e;
  }
  return read_flat_parameters(j, {"sampleRate", "mixType"}, kMaxJambonzParameters, kMaxJambonzParameterBytes,
                              s.custom_parameters, "the preamble");
}

// {"type": "mark", "data": {"name": N, "event": "playout" | "cleared"}}.
std::string read_jambonz_mark(const Json& j, StreamMessage& m) {
  std::string e;
  const Json* data = object_field(j, "data", e);
  if (data == nullptr) return e;
  if (!(e = read_string(*data, "name", m.mark_name, kMaxJambonzMarkBytes, true, "mark's data")).empty()) return e;
  std::string event;
  if (!(e = read_string(*data, "event", event, kMaxJambonzFieldBytes, true, "mark's data")).empty()) return e;
  if (event != "playout" && event != "cleared") return "mark's data.event must be \"playout\" or \"cleared\"";
  m.mark_cleared = event == "cleared";
  return {};
}

}  // namespace

StreamMessage parse_jambonz_preamble(std::string_view json_text) {
  StreamMessage m;
  const PeerJson parsed = parse_peer_json(json_text);
  const Json* j = jambonz_object(parsed, m);
  if (j == nullptr) return m;
  m.event = StreamEvent::kStart;
  m.event_name = "preamble";
  if (std::string error = read_jambonz_preamble(*j, m.start); !error.empty()) {
    m.error = printable("the preamble: " + error);  // names and values are the peer's
    return m;
  }
  m.ok = true;
  return m;
}

StreamMessage parse_jambonz_message(std::string_view json_text) {
  StreamMessage m;
  const PeerJson parsed = parse_peer_json(json_text);
  const Json* j = jambonz_object(parsed, m);
  if (j == nullptr) return m;
  std::string error;
  std::string type;
  std::string event;
  if (!(error = read_string(*j, "type", type, kMaxJambonzFieldBytes, false, "a jambonz message")).empty() ||
      !(error = read_string(*j, "event", event, kMaxJambonzFieldBytes, false, "a jambonz message")).empty()) {
    m.error = printable(error);
    return m;
  }
  if (type.empty() && event.empty()) {
    m.error = "a jambonz message needs a \"type\" or an \"event\" (only the first text frame, the preamble, has neither)";
    return m;
  }
  m.event_name = type.empty() ? event : type;
  if (event == "dtmf") {
    m.event = StreamEvent::kDtmf;
    error = read_dtmf_event(*j, m.digit);
  } else if (type == "mark") {
    m.event = StreamEvent::kMark;
    error = read_jambonz_mark(*j, m);
  }
  if (!error.empty()) {
    m.error = printable(fmt::format("a {} message: {}", m.event_name, error));  // the peer's name
    return m;
  }
  m.ok = true;
  return m;
}

std::string check_jambonz_media_format(const StreamStart& start, int rate_hz) {
  const std::string mix = start.tracks.empty() ? std::string("mono") : start.tracks.front();
  if (mix != "mono") {
    return fmt::format("the preamble's mixType is {}; brisvox takes \"mono\" (the caller alone: \"mixed\" and "
                       "\"stereo\" carry the replies back too): set the listen verb's mixType to \"mono\"",
                       json_quoted(mix));
  }
  if (start.sample_rate_hz == rate_hz) return {};
  return fmt::format("the preamble's sampleRate is {}; this endpoint takes {} (set the listen verb's sampleRate, "
                     "its bidirectionalAudio.sampleRate and the url's ?rate= to match)",
                     start.sample_rate_hz, rate_hz);
}

std::string jambonz_mark_message(std::string_view name) {
  return fmt::format(R"({{"type":"mark","data":{{"name":{}}}}})", json_quoted(name));
}

std::string jambonz_kill_audio_message() { return R"({"type":"killAudio"})"; }

}  // namespace brisvox::server
