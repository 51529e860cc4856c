// A kTranscript event's payload: a 40-byte header, then the text (UTF-8). The stt stage writes it
// (transcript_header + the text), the stream's reader reads it back (decode_transcript).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

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
};
static_assert(sizeof(TranscriptHeader) == 40);

// Everything of `t` but its text.
TranscriptHeader transcript_header(const Transcript& t) noexcept;
// The payload back into a Transcript; a payload shorter than the header gives an empty one.
Transcript decode_transcript(std::span<const std::byte> payload);

}  // namespace brisvox::engine
