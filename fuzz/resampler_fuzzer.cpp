// The resampler front of a stream (Stream::push: any input rate to the model's 8 or 16 kHz, in
// blocks of at most 1024 samples into a scratch buffer of max_output_for(1024), then flush()
// until it returns 0) on arbitrary rates, audio and push sizes.
//
// Invariants: no call writes past its scratch buffer (exactly max_output_for(1024) long, so
// AddressSanitizer sees a write past it); output is finite; output never runs ahead of the input
// (at most ceil(in * out_rate / in_rate) samples so far) and after flush() totals
// in * out_rate / in_rate within a sample; flush() drains in a bounded number of calls; process()
// after flush() is refused; and the streamed output equals one whole-buffer pass (to float
// rounding), however the pushes were cut.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "fuzz_check.h"

namespace {

constexpr std::size_t kBlock = 1024;  // Stream::push's resampler block (engine.cpp)
// Rates below this make a few kilobytes of input into seconds of work (16000 / 1000 outputs per
// input sample): the front handles them the same way, the fuzzer just spends its time elsewhere.
constexpr int kMinFuzzedRateHz = 1000;

// Feeds `in` through `resampler` in pushes of the sizes `chunking` gives (all at once when it
// has none), each cut into blocks of at most `block` samples as Stream::push cuts them; then
// flushes. Checks every call.
std::vector<float> run_front(brisvox::Resampler& resampler, std::span<const float> in,
                             FuzzedDataProvider* chunking, std::size_t block_samples) {
  std::vector<float> scratch(resampler.max_output_for(block_samples));
  std::vector<float> out;
  const double ratio = static_cast<double>(resampler.output_rate_hz()) / resampler.input_rate_hz();
  auto take = [&](std::size_t n, std::size_t num_in) {
    FUZZ_CHECK(n <= scratch.size(), "wrote %zu of %zu", n, scratch.size());
    for (std::size_t i = 0; i < n; ++i) FUZZ_CHECK(std::isfinite(scratch[i]), "output %zu not finite", out.size() + i);
    out.insert(out.end(), scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(n));
    FUZZ_CHECK(static_cast<double>(out.size()) <= std::ceil(static_cast<double>(num_in) * ratio) + 1e-9,
               "%zu samples out after %zu in at %d -> %d Hz", out.size(), num_in, resampler.input_rate_hz(),
               resampler.output_rate_hz());
  };
  std::size_t pos = 0;
  while (pos < in.size()) {
    const std::size_t push = chunking != nullptr && chunking->remaining_bytes() > 0
                                 ? std::min(in.size() - pos, chunking->ConsumeIntegralInRange<std::size_t>(1, 3000))
                                 : in.size() - pos;
    for (std::size_t end = pos + push; pos < end;) {
      const std::size_t block = std::min(block_samples, end - pos);
      const std::size_t n = resampler.process(in.subspan(pos, block), scratch);
      pos += block;
      take(n, pos);
    }
  }
  int calls = 0;
  for (std::size_t n; (n = resampler.flush(scratch)) > 0;) {
    FUZZ_CHECK(++calls < 64, "flush() still returns samples after %d calls", calls);
    take(n, in.size());
  }
  const double expected = static_cast<double>(in.size()) * ratio;
  FUZZ_CHECK(std::abs(static_cast<double>(out.size()) - expected) <= 1.0,
             "%zu samples out for %zu in at %d -> %d Hz: expected %.3f", out.size(), in.size(),
             resampler.input_rate_hz(), resampler.output_rate_hz(), expected);
  try {
    resampler.process(in.first(0), scratch);
    FUZZ_CHECK(false, "process() after flush() was accepted");
  } catch (const brisvox::Error& e) {
    FUZZ_CHECK(e.code() == brisvox::ErrorCode::kInvalidArgument, "%s", e.what());
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider input(data, size);  // rates and push sizes from the end, audio from the front
  const int in_rate = input.ConsumeBool()
                          ? input.PickValueInArray({8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 96000})
                          : input.ConsumeIntegralInRange(kMinFuzzedRateHz, brisvox::Resampler::kMaxRateHz);
  const int out_rate = input.PickValueInArray({8000, 16000});
  const auto bytes = input.ConsumeBytes<std::uint8_t>(2 * input.ConsumeIntegralInRange<std::size_t>(0, size / 2));
  std::vector<float> samples(bytes.size() / 2);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    samples[i] = static_cast<float>(static_cast<std::int16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8))) / 32768.0f;
  }

  brisvox::Resampler front(in_rate, out_rate, kBlock);
  const std::vector<float> streamed = run_front(front, samples, &input, kBlock);
  // The reference: the whole input in one call, as resample() does.
  const std::size_t whole_block = std::max<std::size_t>(1, samples.size());
  brisvox::Resampler whole(in_rate, out_rate, whole_block);
  const std::vector<float> reference = run_front(whole, samples, nullptr, whole_block);
  FUZZ_CHECK(streamed.size() == reference.size(), "streamed %zu samples, whole %zu", streamed.size(),
             reference.size());
  for (std::size_t i = 0; i < streamed.size(); ++i) {
    FUZZ_CHECK(std::abs(streamed[i] - reference[i]) <= 1e-4f, "sample %zu: streamed %g, whole %g", i, streamed[i],
               reference[i]);
  }
  return 0;
}
