// FreeSWITCH mod_audio_fork's reader (server/freeswitch_messages.h) on arbitrary input, read both as
// the metadata (the first text frame) and as a later text. Invariants: never throws; ok exactly when
// there is no error text; an error text is valid UTF-8 of bounded length (it goes into a log line);
// accepted metadata is a JSON object, a start at the rate given, its keys and uuid within their
// bounds; a later text is accepted unless it is a DTMF event with a bad digit, and a DTMF one carries
// one key; a playAudio written back is JSON whose audio decodes to the bytes given.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_stream_message.h"
#include "server/base64.h"
#include "server/freeswitch_messages.h"

namespace server = brisvox::server;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  server::StreamMessage metadata;
  server::StreamMessage text;
  try {
    metadata = server::parse_freeswitch_metadata(input, 16000);
    text = server::parse_freeswitch_text(input);
  } catch (...) {
    FUZZ_CHECK(false, "a FreeSWITCH reader threw");
  }
  check_stream_error(metadata);
  check_stream_error(text);
  const auto j = nlohmann::json::parse(input, nullptr, false);
  FUZZ_CHECK(metadata.event == server::StreamEvent::kStart, "metadata that is not a start");
  if (metadata.ok) {
    FUZZ_CHECK(j.is_object(), "metadata accepted that is not a JSON object");
    FUZZ_CHECK(metadata.start.sample_rate_hz == 16000 && metadata.start.channels == 1, "rate %d, %d channels",
               metadata.start.sample_rate_hz, metadata.start.channels);
    FUZZ_CHECK(metadata.start.custom_parameters.size() <= server::kMaxFreeswitchParameters, "%zu keys",
               metadata.start.custom_parameters.size());
    for (const auto& [name, value] : metadata.start.custom_parameters) {
      FUZZ_CHECK(name.size() <= server::kMaxFreeswitchParameterBytes &&
                     value.size() <= server::kMaxFreeswitchParameterBytes,
                 "a key of %zu/%zu bytes", name.size(), value.size());
    }
    FUZZ_CHECK(metadata.start.call_sid.size() <= server::kMaxFreeswitchIdBytes, "uuid of %zu bytes",
               metadata.start.call_sid.size());
  }
  FUZZ_CHECK(text.event == server::StreamEvent::kDtmf || text.event == server::StreamEvent::kUnknown,
             "a later text read as %d", static_cast<int>(text.event));
  if (!text.ok) FUZZ_CHECK(text.event == server::StreamEvent::kDtmf, "a text that is not DTMF refused");
  if (text.ok && text.event == server::StreamEvent::kDtmf) {
    FUZZ_CHECK(j.is_object() && j["event"] == "dtmf", "DTMF read from what is not a DTMF event");
    FUZZ_CHECK(text.digit.size() == 1, "digit '%s'", text.digit.c_str());
  }
  // The audio written back is the input's bytes, in JSON.
  const auto play = nlohmann::json::parse(server::freeswitch_play_audio_message(8000, input), nullptr, false);
  FUZZ_CHECK(play.is_object() && play["type"] == "playAudio" && play["data"]["sampleRate"] == 8000,
             "a playAudio that is not JSON");
  const auto audio = server::base64_decode(play["data"]["audioContent"].get<std::string>());
  FUZZ_CHECK(audio && *audio == input, "playAudio's audio is not what it was given");
  return 0;
}
