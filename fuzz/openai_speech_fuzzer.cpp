// OpenAI's POST /v1/audio/speech body (server/openai_speech.h) on arbitrary input.
//
// Invariants: it fails only with OpenAiError, status 400 or 404 with a message; what it accepts is
// a body that brisvox's own POST /v1/tts parser (tts_params.h) accepts, with the text it was given.
#include <cstdint>
#include <string_view>

#include "brisvox/error.h"
#include "fuzz_check.h"
#include "server/openai_api.h"
#include "server/openai_speech.h"
#include "server/tts_params.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const brisvox::EngineConfig engine = [] {
    brisvox::EngineConfig c;
    c.models = {brisvox::ModelSpec::piper_tts("en_US-joe-medium.onnx", "tts")};
    return c;
  }();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  try {
    const std::string body = brisvox::server::openai_speech_to_tts_body(engine, input);
    try {
      const brisvox::server::TtsHttpRequest r = brisvox::server::parse_tts_body(body);
      FUZZ_CHECK(r.options.speech.sample_rate_hz == brisvox::server::kOpenAiSpeechRateHz, "%d",
                 r.options.speech.sample_rate_hz);
    } catch (const brisvox::Error& e) {
      FUZZ_CHECK(false, "POST /v1/tts refuses the translated body %s: %s", body.c_str(), e.what());
    }
  } catch (const brisvox::server::OpenAiError& e) {
    FUZZ_CHECK((e.status == 400 || e.status == 404) && !e.message.empty(), "%d %s", e.status, e.message.c_str());
  }
  return 0;
}
