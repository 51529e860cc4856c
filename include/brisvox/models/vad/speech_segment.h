// One stretch of speech found by the segmenter, in samples of the audio the probabilities came
// from (at the rate the VAD ran at).
#pragma once

#include <cstdint>
#include <ostream>

namespace brisvox {

struct SpeechSegment {
  std::int64_t start_sample = 0;  // first sample of the speech, >= 0
  std::int64_t end_sample = 0;    // one past the last sample, <= the audio's length

  friend bool operator==(const SpeechSegment&, const SpeechSegment&) = default;

  // "[start, end)", for test failures and logs.
  friend std::ostream& operator<<(std::ostream& os, const SpeechSegment& s) {
    return os << '[' << s.start_sample << ", " << s.end_sample << ')';
  }
};

}  // namespace brisvox
