#include "server/freeswitch_messages.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "server/base64.h"
#include "server/peer_json.h"
#include "server/stream_json.h"

namespace brisvox::server {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kFreeswitchMediaType = "audio/l16";

StreamMessage freeswitch_start(int rate_hz) {
  StreamMessage m;
  m.event = StreamEvent::kStart;
  m.event_name = "metadata";
  m.start.encoding = std::string(kFreeswitchMediaType);
  m.start.sample_rate_hz = rate_hz;
  m.start.channels = 1;
  return m;
}

}  // namespace

StreamMessage parse_freeswitch_metadata(std::string_view text, int rate_hz) {
  StreamMessage m = freeswitch_start(rate_hz);
  const PeerJson parsed = parse_peer_json(text);
  if (!parsed.error.empty() || !parsed.value.is_object()) {
    m.error = "the metadata (the first text frame: uuid_audio_fork's last argument) must be one JSON object, its keys "
              "the call's parameters, such as {\"uuid\":\"${uuid}\"}";
    return m;
  }
  const Json& j = parsed.value;
  std::string e = read_string(j, "uuid", m.start.call_sid, kMaxFreeswitchIdBytes, false, "the metadata");
  if (e.empty()) {
    e = read_flat_parameters(j, {}, kMaxFreeswitchParameters, kMaxFreeswitchParameterBytes, m.start.custom_parameters,
                             "the metadata");
  }
  if (!e.empty()) {
    m.error = printable(e);  // names and values are the peer's
    return m;
  }
  m.ok = true;
  return m;
}

StreamMessage freeswitch_start_without_metadata(int rate_hz) {
  StreamMessage m = freeswitch_start(rate_hz);
  m.ok = true;
  return m;
}

StreamMessage parse_freeswitch_text(std::string_view text) {
  StreamMessage m;
  m.ok = true;
  m.event_name = "text";  // the FreeSWITCH application's own (send_text, stop's last text)
  const PeerJson parsed = parse_peer_json(text);
  if (!parsed.error.empty() || !parsed.value.is_object()) return m;
  const auto event = parsed.value.find("event");
  if (event == parsed.value.end() || *event != "dtmf") return m;
  m.event = StreamEvent::kDtmf;
  m.event_name = "dtmf";
  if (std::string e = read_dtmf_event(parsed.value, m.digit); !e.empty()) {
    m.ok = false;
    m.error = printable("a dtmf text: " + e);
  }
  return m;
}

std::string freeswitch_play_audio_message(int rate_hz, std::string_view pcm) {
  return fmt::format(R"({{"type":"playAudio","data":{{"audioContentType":"raw","sampleRate":{},"audioContent":"{}"}}}})",
                     rate_hz, base64_encode(pcm));
}

std::string freeswitch_kill_audio_message() { return R"({"type":"killAudio"})"; }

std::string freeswitch_disconnect_message() { return R"({"type":"disconnect"})"; }

}  // namespace brisvox::server
