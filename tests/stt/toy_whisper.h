// A toy Whisper configuration for the search tests (search_test.cpp, beam_test.cpp): 10 text tokens
// (0-9), the specials at 10-19 and 51 timestamps (0.00-1.00 s), no model behind it.
#pragma once

#include "brisvox/models/stt/whisper_config.h"

namespace brisvox::toy {

constexpr int kEot = 10, kSot = 11, kEn = 12, kDe = 13, kTranslate = 14, kTranscribe = 15, kSotLm = 16,
              kSotPrev = 17, kNoSpeech = 18, kNoTimestamps = 19, kTs0 = 20, kVocab = 71;
constexpr int kBlank = 0;  // " "

inline WhisperConfig config(bool multilingual) {
  WhisperConfig c;
  c.dims = {80, 1500, 8, 2, 1, kVocab, 40, 8, 2, 1};
  c.tokens = {kEot, kSot, kTranslate, kTranscribe, kSotLm, kSotPrev, kNoSpeech, kNoTimestamps, kTs0, kBlank};
  c.multilingual = multilingual;
  c.languages = {{"en", kEn}, {"de", kDe}};
  c.suppress_tokens = {3, kTranslate, kTranscribe, kSot, kSotPrev, kSotLm, kNoSpeech};  // 3: a "non-speech" token
  c.suppress_blank = {kBlank, kEot};
  return c;
}

}  // namespace brisvox::toy
