// Whisper's text encoder (WhisperVocabulary::encode: GPT-2's pre-tokenisation, byte-level BPE) on
// arbitrary bytes: a prompt or hotwords as a client sends them.
//
// Vocabulary: the 256 byte tokens of GPT-2's table, a few hundred merged tokens (every pair of the
// letters, digits, space and apostrophe the seeds use, and some triples), then <|endoftext|>.
// Invariants: encode fails only with kInvalidArgument (invalid UTF-8); what it accepts decodes back
// to the same bytes, every id is a regular token (below <|endoftext|>), and encoding is
// deterministic.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "brisvox/error.h"
#include "brisvox/models/stt/whisper_vocabulary.h"
#include "fuzz_check.h"

namespace {

using brisvox::WhisperVocabulary;

const WhisperVocabulary& vocabulary() {
  static const WhisperVocabulary v = [] {
    std::vector<std::pair<int, std::string>> tokens;
    for (int b = 0; b < 256; ++b) tokens.emplace_back(b, std::string(1, static_cast<char>(b)));
    const std::string alphabet = " 'aeinorst01";
    int id = 256;
    for (char a : alphabet) {
      for (char b : alphabet) tokens.emplace_back(id++, std::string{a, b});
    }
    for (const char* word : {" the", " and", "'s", " on", "ing", " te", "ion", "est", " 100", "000"}) {
      tokens.emplace_back(id++, word);
    }
    tokens.emplace_back(id, "<|endoftext|>");
    return WhisperVocabulary::from_tokens(tokens);
  }();
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const WhisperVocabulary& v = vocabulary();
  const int eot = v.find("<|endoftext|>");
  std::vector<int> ids;
  try {
    ids = v.encode(text);
  } catch (const brisvox::Error& e) {
    FUZZ_CHECK(e.code() == brisvox::ErrorCode::kInvalidArgument, "encode failed otherwise: %s", e.what());
    return 0;
  }
  for (int id : ids) FUZZ_CHECK(id >= 0 && id < eot, "id %d is not a regular token", id);
  FUZZ_CHECK(v.decode(ids, eot) == text, "%zu bytes did not decode back", size);
  FUZZ_CHECK(v.encode(text) == ids, "encoding %zu bytes twice differed", size);
  return 0;
}
