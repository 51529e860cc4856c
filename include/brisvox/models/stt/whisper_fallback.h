// faster-whisper's temperature fallback (transcribe.py, generate_with_fallback): a window is
// decoded at the first temperature; if the result looks like a failure (its text compresses too
// well, i.e. it repeats itself, or its mean log-probability is too low) and is not silence, it is
// decoded again at the next temperature, by sampling. When every temperature fails, the attempt
// with the best mean log-probability among those that do not repeat themselves (or among all) is
// kept.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "brisvox/models/stt/whisper_search.h"

namespace brisvox {

struct WhisperFallbackOptions {
  // Temperatures tried in turn (the decode options' own temperature is then ignored); one: no
  // fallback. Each 0 to 10.
  std::vector<float> temperatures = {0.0f};
  // A result whose text compresses better than this repeats itself (<= 0: not checked).
  float compression_ratio_threshold = 2.4f;

  // The most sequences one attempt decodes a window as (WhisperDecodeOptions::width()).
  int max_width(const WhisperDecodeOptions& decode) const;
  // One search option set per temperature. Error(kInvalidArgument) for an empty list.
  std::vector<WhisperDecodeOptions> attempts(const WhisperDecodeOptions& decode) const;
};

// Temperatures written as a comma-separated list ("0,0.2,0.4"), each 0 to 10.
// Error(kInvalidArgument) quoting the list otherwise.
std::vector<float> parse_temperatures(std::string_view list);

// faster-whisper 1.2.1's transcribe defaults for decoding: beam_size 5, best_of 5, patience 1,
// length_penalty 1, temperatures 0, 0.2, ..., 1.0, compression ratio 2.4, log-prob -1.0,
// no-speech 0.6. The rest of `decode` (language, task, timestamps, suppression) is kept.
void use_faster_whisper_decoding(WhisperDecodeOptions& decode, WhisperFallbackOptions& fallback);

// What one decoding attempt of a window gave.
struct WhisperAttempt {
  float temperature = 0.0f;
  double avg_logprob = 0.0;
  float no_speech_prob = 0.0f;
  double compression_ratio = 0.0;
};

// faster-whisper's get_compression_ratio: the text's UTF-8 bytes over their zlib-compressed
// length (zlib's default level); 0 for an empty text. Leading and trailing whitespace is not
// counted (the caller's text as faster-whisper strips it).
double whisper_compression_ratio(std::string_view text);

// True when the attempt should be decoded again at the next temperature: the compression ratio
// above `compression_ratio_threshold` (<= 0: not checked) or avg_logprob below the decode
// options' log_prob_threshold, unless the no-speech rule calls it silence (no_speech_prob above
// no_speech_threshold with avg_logprob below log_prob_threshold).
bool whisper_needs_fallback(const WhisperAttempt& attempt, const WhisperDecodeOptions& options,
                            float compression_ratio_threshold);

// After the last of `attempts` (of `temperatures` in all): the index of the attempt to keep (the
// last one when it needs no fallback, whisper_pick_attempt's when none is left to try), or nullopt
// to decode again at the next temperature.
std::optional<std::size_t> whisper_kept_attempt(std::span<const WhisperAttempt> attempts, std::size_t temperatures,
                                                const WhisperDecodeOptions& options, float compression_ratio_threshold);

// The attempt to keep when every one needed a fallback: the best avg_logprob among those whose
// compression ratio is within the threshold, or among all when none is (the first on a tie).
std::size_t whisper_pick_attempt(std::span<const WhisperAttempt> attempts, float compression_ratio_threshold);

}  // namespace brisvox
