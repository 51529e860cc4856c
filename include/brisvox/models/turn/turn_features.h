// Smart Turn's preprocessing, as the reference does it: the last 8 s of the turn audio at 16 kHz,
// zero-padded on the left to 128000 samples, normalised to zero mean and unit variance over those
// 128000 samples ((x - mean) / sqrt(var + 1e-7)), then Whisper's log-mel features -> [80, 800].
//
// Bit for bit what Pipecat computes (pipecat-ai 1.14, `_whisper_features.py`, vendored from
// transformers' WhisperFeatureExtractor), not merely close: the int8 Smart Turn v3.2 model
// requantizes its activations at every layer, so a feature that differs by one float32 ulp can
// move the probability by a whole quantization step (measured: noise of 1e-7 on the features
// changes the output of 3 turns in 33, by up to 0.15). So the normalisation is numpy's float32
// arithmetic exactly (its pairwise summation for the mean and the variance), and the spectrogram,
// the mel filters and the logarithm are computed in double, as numpy does, and rounded to float32
// once at the end. (LogMelExtractor, in float with kissfft, is within ~1e-5 of this.)
//
// Preallocated: compute() performs no heap allocation (~2.6 MB of buffers per instance). One
// instance per thread.
#pragma once

#include <memory>
#include <span>

namespace brisvox {

class TurnFeatures {
 public:
  TurnFeatures();
  ~TurnFeatures();
  TurnFeatures(TurnFeatures&&) noexcept;
  TurnFeatures& operator=(TurnFeatures&&) noexcept;

  // `audio`: the turn at 16 kHz (any length; only the last 8 s are used). `out`: kTurnFeatureValues.
  // Throws Error(kInvalidArgument) for a wrong `out` size, Error(kBadAudio) for NaN/Inf.
  void compute(std::span<const float> audio, std::span<float> out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace brisvox
