#include "brisvox/audio/resampler.h"

#include <fmt/format.h>
#include <soxr.h>

#include <algorithm>
#include <cstdint>

#include "brisvox/error.h"
#include "twice_upsampler.h"

namespace brisvox {
namespace {

// Output samples libsoxr may hand back in one call beyond ceil(input * ratio): output it computed
// from earlier input but could not return yet, because it filters in blocks. Measured over random
// chunk sizes 1..4096 and every pair of 8k/11.025k/16k/22.05k/44.1k/48k/96k: the excess peaked at
// 1162 samples when downsampling and grew with the ratio when upsampling (1658 for 8k -> 16k,
// 7354 for 8k -> 48k, 14508 for 8k -> 96k). The margin, kOutputMarginSamples per started unit of
// ratio, covers those with room; a short margin would only add latency (nothing is dropped).
constexpr std::size_t kOutputMarginSamples = 4096;

void check_rate(int rate_hz, const char* which) {
  if (rate_hz <= 0 || rate_hz > Resampler::kMaxRateHz) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("resampler {} rate {} Hz is out of range: expected 1..{} Hz", which,
                            rate_hz, Resampler::kMaxRateHz));
  }
}

// ceil(n * num / den) without overflow for any realistic n (n < 2^43 at 768 kHz).
std::size_t ceil_scale(std::size_t n, int num, int den) {
  const auto wide = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(num);
  return static_cast<std::size_t>((wide + static_cast<std::uint64_t>(den) - 1) /
                                  static_cast<std::uint64_t>(den));
}

soxr* create_soxr(int input_rate_hz, int output_rate_hz) {
  const soxr_io_spec_t io_spec = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality_spec = soxr_quality_spec(SOXR_HQ, 0);
  // One thread: brisvox parallelises across streams, not inside one.
  const soxr_runtime_spec_t runtime_spec = soxr_runtime_spec(1);
  soxr_error_t error = nullptr;
  soxr* handle =
      soxr_create(input_rate_hz, output_rate_hz, 1, &error, &io_spec, &quality_spec, &runtime_spec);
  if (error != nullptr || handle == nullptr) {
    if (handle != nullptr) soxr_delete(handle);
    throw Error(ErrorCode::kInternal,
                fmt::format("libsoxr cannot resample {} Hz -> {} Hz: {}", input_rate_hz,
                            output_rate_hz, error != nullptr ? error : "unknown error"));
  }
  return handle;
}

}  // namespace

void Resampler::SoxrDeleter::operator()(soxr* handle) const noexcept { soxr_delete(handle); }

Resampler::Resampler(int input_rate_hz, int output_rate_hz, std::size_t max_input_chunk_samples)
    : input_rate_hz_(input_rate_hz),
      output_rate_hz_(output_rate_hz),
      max_input_chunk_samples_(max_input_chunk_samples) {
  check_rate(input_rate_hz, "input");
  check_rate(output_rate_hz, "output");
  if (max_input_chunk_samples == 0) {
    throw Error(ErrorCode::kInvalidArgument, "resampler max_input_chunk_samples must be > 0");
  }
  if (output_rate_hz == 2 * input_rate_hz) {
    twice_ = std::make_unique<audio_detail::TwiceUpsampler>();
  } else if (!is_passthrough()) {
    soxr_.reset(create_soxr(input_rate_hz, output_rate_hz));
  }
}

Resampler::~Resampler() = default;
Resampler::Resampler(Resampler&&) noexcept = default;
Resampler& Resampler::operator=(Resampler&&) noexcept = default;

std::size_t Resampler::max_output_for(std::size_t num_input_samples) const noexcept {
  if (is_passthrough()) return num_input_samples;
  // No blocks: twice what comes in, plus the tail flush() owes (also what max_output_for(0) holds).
  if (twice_) return 2 * (num_input_samples + audio_detail::TwiceUpsampler::kHalfTaps);
  const std::size_t ratio_ceil = ceil_scale(1, output_rate_hz_, input_rate_hz_);
  return ceil_scale(num_input_samples, output_rate_hz_, input_rate_hz_) +
         kOutputMarginSamples * ratio_ceil;
}

std::size_t Resampler::process(std::span<const float> in, std::span<float> out) {
  if (out.size() < max_output_for(in.size())) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Resampler::process: output holds {} samples, {} input samples need {}",
                            out.size(), in.size(), max_output_for(in.size())));
  }
  if (flushed_) {
    throw Error(ErrorCode::kInvalidArgument,
                "Resampler::process called after flush(): call reset() to start a new stream");
  }
  if (is_passthrough()) {
    std::copy(in.begin(), in.end(), out.begin());
    return in.size();
  }
  std::size_t num_written = 0;
  for (std::size_t pos = 0; pos < in.size(); pos += max_input_chunk_samples_) {
    const std::size_t num_in = std::min(max_input_chunk_samples_, in.size() - pos);
    if (twice_) {
      num_written += twice_->process(in.subspan(pos, num_in), out.subspan(num_written));
      continue;
    }
    std::size_t num_out = 0;
    // A null idone makes libsoxr take all of the input; output beyond out's space stays in its
    // FIFO for the next call rather than being dropped.
    const soxr_error_t error =
        soxr_process(soxr_.get(), in.data() + pos, num_in, nullptr, out.data() + num_written,
                     out.size() - num_written, &num_out);
    if (error != nullptr) {
      throw Error(ErrorCode::kInternal, fmt::format("libsoxr failed: {}", error));
    }
    num_written += num_out;
  }
  return num_written;
}

std::size_t Resampler::flush(std::span<float> out) {
  flushed_ = true;
  if (is_passthrough() || out.empty()) return 0;
  if (twice_) return twice_->flush(out);
  std::size_t num_out = 0;
  // A null input tells libsoxr the stream has ended, so it filters the tail against silence.
  const soxr_error_t error =
      soxr_process(soxr_.get(), nullptr, 0, nullptr, out.data(), out.size(), &num_out);
  if (error != nullptr) {
    throw Error(ErrorCode::kInternal, fmt::format("libsoxr failed: {}", error));
  }
  return num_out;
}

void Resampler::reset() {
  flushed_ = false;
  if (twice_) {
    twice_->reset();
  } else if (!is_passthrough()) {
    const soxr_error_t error = soxr_clear(soxr_.get());
    if (error != nullptr) {
      throw Error(ErrorCode::kInternal, fmt::format("libsoxr failed to reset: {}", error));
    }
  }
}

std::vector<float> resample(std::span<const float> in, int from_hz, int to_hz) {
  check_rate(from_hz, "input");
  check_rate(to_hz, "output");
  if (from_hz == to_hz) return {in.begin(), in.end()};
  // round(n * to / from), halves up, in integers so the length never depends on float rounding.
  const auto wide = static_cast<std::uint64_t>(in.size()) * static_cast<std::uint64_t>(to_hz);
  const auto num_target = static_cast<std::size_t>(
      (wide + static_cast<std::uint64_t>(from_hz) / 2) / static_cast<std::uint64_t>(from_hz));
  if (in.empty()) return {};

  Resampler resampler(from_hz, to_hz, 1 << 16);
  std::vector<float> out(resampler.max_output_for(in.size()));
  std::size_t num_written = resampler.process(in, out);
  while (true) {
    if (out.size() - num_written < 4096) out.resize(num_written + 4096);
    const std::size_t n =
        resampler.flush(std::span<float>(out).subspan(num_written, out.size() - num_written));
    if (n == 0) break;
    num_written += n;
  }
  out.resize(num_target, 0.0f);
  if (num_written < num_target) {
    std::fill(out.begin() + static_cast<std::ptrdiff_t>(num_written), out.end(), 0.0f);
  }
  return out;
}

}  // namespace brisvox
