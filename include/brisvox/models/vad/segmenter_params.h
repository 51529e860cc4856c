// Parameters of the speech segmenter that turns Silero VAD probabilities into speech segments.
//
// Names, defaults and meaning follow silero-vad 6.2.1's get_speech_timestamps (the Python
// argument each field mirrors is given beside it), so a configuration that works there works
// here and gives the same segments.
//
// Thresholds are doubles, not floats, on purpose: silero-vad compares each (float32) probability
// with Python floats, and the default exit threshold max(0.5 - 0.15, 0.01) is the double
// 0.35000000000000003, which lies above the float 0.35f. Holding it as a float would classify a
// probability of exactly 0.35f differently from the reference.
#pragma once

#include <cstdint>
#include <limits>

namespace brisvox {

struct SegmenterParams {
  // A frame whose probability is >= threshold is speech (`threshold`). Range [0, 1].
  double threshold = 0.5;
  // Inside speech, a frame whose probability is < neg_threshold is silence (`neg_threshold`).
  // Range [0, threshold]; any negative value means "auto": max(threshold - 0.15, 0.01), capped at
  // threshold (the one departure from silero-vad, which lets it exceed a threshold below 0.01).
  double neg_threshold = -1.0;
  // A segment that ends in silence, or at the end of the audio, is dropped unless it is longer
  // than this (`min_speech_duration_ms`). Segments cut by max_speech_s are always kept. >= 0.
  int min_speech_ms = 250;
  // Longer speech is cut (`max_speech_duration_s`): at the longest (or last, see below) pause
  // of more than min_silence_at_max_speech_ms inside it, else right where the limit is reached.
  // > 0; infinity (the default) disables cutting.
  double max_speech_s = std::numeric_limits<double>::infinity();
  // Speech ends only after this much silence (`min_silence_duration_ms`). >= 0.
  int min_silence_ms = 100;
  // Every segment is widened by this much on each side, or by half the gap where two segments
  // are closer than twice this (`speech_pad_ms`). >= 0.
  int speech_pad_ms = 30;
  // Pauses longer than this are candidate cut points for max_speech_s
  // (`min_silence_at_max_speech`). >= 0.
  int min_silence_at_max_speech_ms = 98;
  // Cut over-long speech at the longest candidate pause seen in it (true), or at the last pause
  // (false, silero-vad's behaviour before this option existed)
  // (`use_max_poss_sil_at_max_speech`).
  bool use_max_poss_sil_at_max_speech = true;

  // Throws Error(kInvalidArgument) naming the first field out of range and its valid range.
  void validate() const;

  // The exit threshold actually used: neg_threshold, or min(max(threshold - 0.15, 0.01),
  // threshold) if negative.
  double effective_neg_threshold() const;
};

// The samples per probability frame (window) at a rate: silero_chunk_samples (silero_rates.h).

// SegmenterParams turned into samples at one rate, computed as silero-vad does. silero-vad
// computes `rate * ms / 1000` in floating point; at 8000 and 16000 Hz every such product of an
// integer number of milliseconds is a whole number, so the integers below are those values
// exactly. Only max_speech_samples (`rate * max_speech_s - window - 2 * pad`) can be fractional,
// infinite, or even negative (then every frame after a start cuts), and is kept as a double.
struct SegmenterSamples {
  int sample_rate_hz = 16000;
  std::int64_t window_samples = 512;
  double threshold = 0.5;
  double neg_threshold = 0.35;
  std::int64_t min_speech_samples = 0;
  std::int64_t min_silence_samples = 0;
  std::int64_t speech_pad_samples = 0;
  std::int64_t min_silence_at_max_speech_samples = 0;
  double max_speech_samples = std::numeric_limits<double>::infinity();
  bool use_max_poss_sil_at_max_speech = true;

  // Validates `params` and `sample_rate_hz` (Error kInvalidArgument) and converts.
  static SegmenterSamples from(const SegmenterParams& params, int sample_rate_hz);
};

}  // namespace brisvox
