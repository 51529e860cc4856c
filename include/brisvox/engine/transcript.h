// A transcript (read with Stream::read_transcript or Call::read_transcript): a header of its own so
// that what carries transcripts inside the engine (the stt stage, the payload format) does not
// depend on the handles.
#pragma once

#include <string>
#include <vector>

#include "brisvox/models/stt/whisper_words.h"

namespace brisvox {

// What speech-to-text made of one segment (a kTranscript event's payload), or of an open one so far
// (a kTranscriptPartial's).
struct Transcript {
  std::string text;           // UTF-8, as faster-whisper's Segment.text (leading space); "" if no_speech
  float avg_logprob = 0.0f;   // of the sampled tokens
  float no_speech_prob = 0.0f;
  bool no_speech = false;     // Whisper's no-speech rule fired: the segment holds no speech
  bool hit_token_limit = false;  // the decoder stopped at its token limit, not at <|endoftext|>
  int window_frames = 0;      // the encoder window it was decoded in (3000 = 30 s)
  // The language it was decoded in: the stream's given one, the detected one (multilingual models
  // without a language), or "en" (English-only models); and its detection probability (1 when
  // given).
  std::string language;
  float language_probability = 1.0f;
  // The decoding attempt kept: its temperature (0 unless the fallback fired) and its text's
  // compression ratio (whisper_fallback.h).
  float temperature = 0.0f;
  float compression_ratio = 0.0f;
  // With word timestamps (SttOptions::word_timestamps): its words, times in stream seconds.
  std::vector<WhisperWord> words;
  // A kTranscriptPartial's: the latest decode's text after `text` (which two consecutive decodes
  // agreed on); it may still change.
  std::string unstable;
};

}  // namespace brisvox
