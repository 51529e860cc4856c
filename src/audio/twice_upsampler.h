// Streaming 2x upsampling (8 kHz telephony to the 16 kHz models) with a fixed, short delay: a
// Kaiser-windowed half-band interpolator. Every input sample passes through unchanged at the even
// output positions; each odd output is interpolated from the 24 input samples on either side.
// Flat to +-0.001 dB up to 0.425 of the input rate (3.4 kHz at 8 kHz), images at least 82 dB down
// from 0.575 of it, and a look-ahead of 24 input samples (3 ms at 8 kHz), against libsoxr's
// block-wise filtering whose output trails the input by up to ~100 ms in bursts at this ratio.
// The Resampler uses it for every exact doubling; the output is aligned with the input (no delay
// in the samples themselves) and totals exactly twice the input after flush().
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <vector>

namespace brisvox::audio_detail {

class TwiceUpsampler {
 public:
  static constexpr std::size_t kHalfTaps = 24;  // input samples on each side of an interpolated one
  static constexpr std::size_t kPiece = 256;     // input samples buffered at a time

  // Allocates its buffer (about 1.3 KB: input is taken kPiece samples at a time).
  TwiceUpsampler();

  // Consumes `in` and writes 2 * (samples that now have their look-ahead) to `out`, which must
  // hold 2 * in.size() (Error kInternal otherwise); returns how many.
  std::size_t process(std::span<const float> in, std::span<float> out);
  // Ends the stream: writes the outputs still owed (2 * kHalfTaps at most) and returns how many.
  std::size_t flush(std::span<float> out);
  void reset();

 private:
  std::size_t emit(std::size_t num_ready, std::span<float> out);

  std::array<float, kHalfTaps> weights_{};
  // Input samples [begin_, end_) of the stream not yet emitted plus the kHalfTaps - 1 before them:
  // sample n sits at index n - first_ + kHalfTaps - 1; the front is zeros before the stream starts.
  std::vector<float> buffer_;
  std::size_t filled_ = 0;
  std::size_t owed_ = 0;  // input samples received whose outputs were not written yet
};

}  // namespace brisvox::audio_detail
