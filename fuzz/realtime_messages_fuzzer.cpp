// The OpenAI Realtime transcription-session reader (server/realtime_messages.h) on arbitrary input.
// Invariants: never throws; a refusal names a code and a message of bounded length, valid UTF-8
// (it goes back to the client as JSON); an accepted session.update holds only what a session may
// (audio/pcm at 24 kHz or G.711 at 8 kHz, a VAD within its bounds, a transcription with a model of
// bounded size); an accepted append's audio is the base64 of its "audio"; the error event written
// about a refusal is valid JSON.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_utf8.h"
#include "server/realtime_messages.h"

namespace {

namespace server = brisvox::server;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  server::RealtimeSession current;
  current.transcription = server::RealtimeTranscription{"whisper-1", "en", ""};
  server::RealtimeClientEvent e;
  try {
    e = server::parse_realtime_event(input, current);
  } catch (...) {
    FUZZ_CHECK(false, "parse_realtime_event threw");
  }
  FUZZ_CHECK(e.event_id.size() <= server::kMaxRealtimeIdBytes, "event_id of %zu bytes", e.event_id.size());
  if (e.problem) {
    FUZZ_CHECK(!e.problem->code.empty() && !e.problem->message.empty(), "a refusal without a code or message");
    FUZZ_CHECK(e.problem->message.size() < 1024, "refusal message of %zu bytes", e.problem->message.size());
    FUZZ_CHECK(is_utf8(e.problem->message), "the refusal message is not valid UTF-8");
    try {
      (void)nlohmann::json::parse(server::realtime_error("event_1", "invalid_request_error", *e.problem, e.event_id));
    } catch (...) {
      FUZZ_CHECK(false, "the error event is not valid JSON");
    }
    return 0;
  }
  if (e.type == server::RealtimeClientType::kSessionUpdate) {
    const server::RealtimeSession& s = e.session;
    const bool pcm = s.encoding == brisvox::SampleEncoding::kPcmS16le && s.sample_rate_hz == 24000;
    const bool g711 = (s.encoding == brisvox::SampleEncoding::kMulaw || s.encoding == brisvox::SampleEncoding::kAlaw) &&
                      s.sample_rate_hz == 8000;
    FUZZ_CHECK(pcm || g711, "format %d at %d Hz", static_cast<int>(s.encoding), s.sample_rate_hz);
    if (s.turn_detection) {
      const auto& v = *s.turn_detection;
      FUZZ_CHECK(v.threshold >= 0 && v.threshold <= 1, "threshold %f", v.threshold);
      FUZZ_CHECK(v.prefix_padding_ms >= 0 && v.prefix_padding_ms <= server::kMaxRealtimePaddingMs, "padding %d",
                 v.prefix_padding_ms);
      FUZZ_CHECK(v.silence_duration_ms >= 0 && v.silence_duration_ms <= server::kMaxRealtimeSilenceMs, "silence %d",
                 v.silence_duration_ms);
    }
    if (s.transcription) {
      FUZZ_CHECK(!s.transcription->model.empty() && s.transcription->model.size() <= server::kMaxRealtimeModelBytes,
                 "model of %zu bytes", s.transcription->model.size());
      FUZZ_CHECK(s.transcription->language.size() <= server::kMaxRealtimeLanguageBytes, "language too long");
      FUZZ_CHECK(s.transcription->prompt.size() <= server::kMaxRealtimePromptBytes, "prompt too long");
    }
    (void)nlohmann::json::parse(server::realtime_session_json(s, "sess_1"));
  }
  if (e.type == server::RealtimeClientType::kAppend) {
    FUZZ_CHECK(e.audio.size() <= size, "%zu bytes of audio from %zu of input", e.audio.size(), size);
  }
  return 0;
}
