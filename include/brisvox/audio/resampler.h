// Sample-rate conversion of mono float audio, streaming or whole-buffer, over libsoxr (SOXR_HQ:
// 20-bit quality, passband to 91% of the lower Nyquist frequency, linear phase). An exact
// doubling (8 kHz telephony into the 16 kHz models) is a half-band interpolator of brisvox's own
// instead (src/audio/twice_upsampler.h): flat to 0.425 of the input rate, images 82 dB down, a
// fixed 3 ms look-ahead at 8 kHz where libsoxr's block filtering holds output back by up to
// ~100 ms, and about a quarter of libsoxr's CPU at that ratio.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

struct soxr;  // libsoxr's handle (soxr_t is `struct soxr*`); kept out of this header.

namespace brisvox {
namespace audio_detail {
class TwiceUpsampler;
}

// Streaming resampler for one mono stream.
//
// Push input with process() as it arrives, then call flush() at the end of the stream to drain
// the filter's tail. libsoxr filters in blocks, so output lags input by up to a block (tens of ms)
// and comes in bursts: a call may return fewer or more samples than in.size() * ratio, and
// flush() returns the rest (the doubling: exactly 2 * (input so far - 24) samples, then 48 from
// flush()). Concatenating every process() output and the flush() output gives the
// same samples (to float rounding) however the input was chunked.
//
// When both rates are equal the resampler is an exact pass-through copy (no delay, flush() writes
// nothing).
//
// Allocation: everything brisvox needs is allocated in the constructor; process() and flush()
// never allocate in brisvox code. libsoxr sizes its internal FIFOs on the first calls, bounded by
// max_input_chunk_samples (process() feeds larger inputs to libsoxr in pieces of at most that).
//
// Move-only; not thread-safe (one stream, one caller at a time).
class Resampler {
 public:
  static constexpr int kMaxRateHz = 768000;

  // Throws Error(kInvalidArgument) if a rate is not in [1, kMaxRateHz] or
  // max_input_chunk_samples is 0; Error(kInternal) if libsoxr cannot be set up.
  Resampler(int input_rate_hz, int output_rate_hz, std::size_t max_input_chunk_samples = 4096);
  ~Resampler();
  Resampler(Resampler&&) noexcept;
  Resampler& operator=(Resampler&&) noexcept;
  Resampler(const Resampler&) = delete;
  Resampler& operator=(const Resampler&) = delete;

  int input_rate_hz() const noexcept { return input_rate_hz_; }
  int output_rate_hz() const noexcept { return output_rate_hz_; }
  bool is_passthrough() const noexcept { return input_rate_hz_ == output_rate_hz_; }

  // Size `out` of process() with this: ceil(num_input_samples * out_rate / in_rate) plus a margin
  // (4096 samples per started unit of out_rate / in_rate) for output libsoxr computes in blocks
  // and holds back from earlier calls. Pass-through: exactly num_input_samples.
  std::size_t max_output_for(std::size_t num_input_samples) const noexcept;

  // Consumes all of `in` and writes resampled samples to the front of `out`; returns how many.
  // Throws Error(kInvalidArgument) if out.size() < max_output_for(in.size()) or if called after
  // flush() without reset(). Output that did not fit (only possible beyond the margin) is kept
  // inside and comes out of later calls: nothing is dropped.
  std::size_t process(std::span<const float> in, std::span<float> out);

  // Ends the stream: writes up to out.size() samples of the remaining tail and returns how many.
  // Call repeatedly until it returns 0. The tail can be one libsoxr block: measured up to ~1200
  // samples when downsampling to 16 kHz, ~8000 for 8 kHz -> 48 kHz; a max_output_for(0) buffer
  // takes it in one call.
  // Afterwards process() throws until reset().
  std::size_t flush(std::span<float> out);

  // Forgets all input: ready for a new stream with the same rates. May allocate (libsoxr).
  void reset();

 private:
  struct SoxrDeleter {
    void operator()(soxr* handle) const noexcept;
  };

  int input_rate_hz_;
  int output_rate_hz_;
  std::size_t max_input_chunk_samples_;
  std::unique_ptr<soxr, SoxrDeleter> soxr_;
  std::unique_ptr<audio_detail::TwiceUpsampler> twice_;  // exact doublings (8 -> 16 kHz) instead of soxr_
  bool flushed_ = false;
};

// Whole-buffer resampling with the same filter as Resampler. The output has exactly
// round(in.size() * to_hz / from_hz) samples (halves round up): libsoxr's flushed tail is padded
// with zeros or trimmed to that length, so the output keeps the input's duration and lengths
// are predictable (8000 -> 16000 doubles exactly). Equal rates return a copy.
// Throws Error(kInvalidArgument) for rates outside [1, Resampler::kMaxRateHz].
std::vector<float> resample(std::span<const float> in, int from_hz, int to_hz);

}  // namespace brisvox
