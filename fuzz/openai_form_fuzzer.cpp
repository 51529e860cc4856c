// The form of OpenAI's POST /v1/audio/transcriptions (server/openai_api.h parse_transcription_form)
// on arbitrary bodies: the first input byte splits the data into a Content-Type's boundary part and
// a body, as multipart_fuzzer does.
//
// Invariants: it fails only with OpenAiError, whose status is 400 or 404 and whose message is not
// empty; an accepted form's audio lies inside the body and is not empty, and its model is the
// configured one.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "server/openai_api.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const brisvox::EngineConfig engine = [] {
    brisvox::EngineConfig c;
    c.models = {brisvox::ModelSpec::whisper("tiny.en", "stt")};
    return c;
  }();
  if (size == 0) return 0;
  const std::size_t split = std::min<std::size_t>(data[0], size - 1);
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string content_type = "multipart/form-data; " + std::string(input.substr(0, split));
  const std::string_view body = input.substr(split);
  std::string_view audio;
  try {
    const brisvox::server::TranscriptionForm form =
        brisvox::server::parse_transcription_form(engine, body, content_type, audio);
    FUZZ_CHECK(!audio.empty() && audio.data() >= body.data() && audio.data() + audio.size() <= body.data() + body.size(),
               "the audio lies outside the body");
    FUZZ_CHECK(form.model == "stt", "%s", form.model.c_str());
  } catch (const brisvox::server::OpenAiError& e) {
    FUZZ_CHECK((e.status == 400 || e.status == 404) && !e.message.empty(), "%d %s", e.status, e.message.c_str());
  }
  return 0;
}
