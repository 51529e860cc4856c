// A kTranscript (kTranscriptPartial) event's payload: a 56-byte header, the text (UTF-8), the
// unstable text, then its words, each a
// TranscriptWordHeader and the word's text. The stt stage writes it (encode_transcript), the
// stream's reader reads it back (decode_transcript).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "brisvox/engine/transcript.h"

namespace brisvox::engine {

struct TranscriptHeader {
  float avg_logprob;
  float no_speech_prob;
  std::uint32_t flags;  // kNoSpeech | kHitTokenLimit
  std::int32_t window_frames;
  float language_probability;
  float temperature;
  float compression_ratio;
  char language[12];  // the code, NUL-padded (Whisper's longest is 3 bytes)
  std::uint32_t text_bytes;
  std::uint32_t words;
  std::uint32_t unstable_bytes;
  std::uint32_t reserved;
};
static_assert(sizeof(TranscriptHeader) == 56);

struct TranscriptWordHeader {
  double start_s;
  double end_s;
  float probability;
  std::uint32_t text_bytes;
};
static_assert(sizeof(TranscriptWordHeader) == 24);

// `t` as a payload, into `out` (cleared; it grows only past its capacity).
void encode_transcript(const Transcript& t, std::vector<std::byte>& out);
// The payload back into a Transcript; a payload shorter than the header gives an empty one, and
// words that do not fit what is there are left out.
Transcript decode_transcript(std::span<const std::byte> payload);

}  // namespace brisvox::engine
