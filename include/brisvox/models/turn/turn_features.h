// Smart Turn's preprocessing, as the reference does it: the last 8 s of the turn audio at 16 kHz,
// zero-padded on the left to 128000 samples, normalised to zero mean and unit variance over those
// 128000 samples ((x - mean) / sqrt(var + 1e-7)), then Whisper's log-mel features -> [80, 800].
//
// Preallocated: compute() performs no heap allocation. One instance per thread.
#pragma once

#include <span>
#include <vector>

#include "brisvox/audio/log_mel.h"

namespace brisvox {

class TurnFeatures {
 public:
  TurnFeatures();

  // `audio`: the turn at 16 kHz (any length; only the last 8 s are used). `out`: kTurnFeatureValues.
  // Throws Error(kInvalidArgument) for a wrong `out` size, Error(kBadAudio) for NaN/Inf.
  void compute(std::span<const float> audio, std::span<float> out);

 private:
  std::vector<float> window_;  // 128000 samples
  LogMelExtractor mel_;
};

}  // namespace brisvox
