#include "models/tts/piper/winograd_conv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "base/log.h"
#include "brisvox/error.h"
#include "models/tts/piper/winograd_matrices.h"

namespace brisvox::piper {
namespace {

// U[k][c][o] = sum_i G[k][i] W[o][c][i], in double and in a fixed order: the same floats on
// every machine.
template <class F>
std::vector<float> transform_weights(std::span<const float> w, int64_t out, int64_t in) {
  std::vector<float> u(size_t(F::K * in * out));
  for (int k = 0; k < F::K; ++k) {
    for (int64_t c = 0; c < in; ++c) {
      for (int64_t o = 0; o < out; ++o) {
        double s = 0;
        for (int i = 0; i < F::r; ++i) s += F::g[k * F::r + i] * double(w[size_t((o * in + c) * F::r + i)]);
        u[size_t((k * in + c) * out + o)] = float(s);
      }
    }
  }
  return u;
}

// What this CPU and build can run, widest first; asked once (the CPU does not change).
const std::vector<WinogradIsa>& supported() {
  static const std::vector<WinogradIsa> isas = [] {
    std::vector<WinogradIsa> out;
#if defined(__x86_64__) && defined(BRISVOX_WINOGRAD_X86)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) out.push_back(WinogradIsa::kAvx512);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) out.push_back(WinogradIsa::kAvx2);
#endif
    out.push_back(WinogradIsa::kGeneric);
    // BRISVOX_WINOGRAD_ISA=avx2|generic: use no wider kernel than that (to compare them, and to
    // test a CPU without them on one that has them).
    if (const char* cap = std::getenv("BRISVOX_WINOGRAD_ISA"); cap != nullptr && *cap != '\0') {
      const std::string want = cap;
      const auto at = std::find_if(out.begin(), out.end(), [&](WinogradIsa i) { return want == WinogradConv::name(i); });
      if (at == out.end()) {
        detail::log(LogLevel::kWarn, "BRISVOX_WINOGRAD_ISA='{}' is not one of this CPU's kernels (avx512, avx2, "
                    "generic): ignored", want);
      } else {
        out.erase(out.begin(), at);
      }
    }
    return out;
  }();
  return isas;
}

bool cpu_has(WinogradIsa isa) {
  const auto& isas = supported();
  return std::find(isas.begin(), isas.end(), isa) != isas.end();
}

WinogradIsa best_isa() { return supported().front(); }

}  // namespace

WinogradConv::WinogradConv(std::span<const float> weight, std::span<const float> bias,
                           int64_t out_channels, int64_t in_channels, int64_t taps, int64_t dilation,
                           std::optional<float> leaky_alpha) {
  if (taps != 3 && taps != 5 && taps != 7) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("WinogradConv has F(4, r) forms for 3, 5 and 7 taps, not {}", taps));
  }
  if (dilation < 1 || out_channels < 1 || in_channels < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("WinogradConv needs a dilation and channel counts >= 1 (got dilation {}, "
                            "{} -> {} channels)", dilation, in_channels, out_channels));
  }
  if (weight.size() != size_t(out_channels * in_channels * taps)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("WinogradConv weight has {} values, expected {} x {} x {} = {}", weight.size(),
                            out_channels, in_channels, taps, out_channels * in_channels * taps));
  }
  if (!bias.empty() && bias.size() != size_t(out_channels)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("WinogradConv bias has {} values, expected {}", bias.size(), out_channels));
  }
  plan_.in = in_channels;
  plan_.out = out_channels;
  plan_.taps = taps;
  plan_.dilation = dilation;
  plan_.leaky = leaky_alpha.has_value();
  plan_.alpha = leaky_alpha.value_or(0.f);
  plan_.bias.assign(bias.begin(), bias.end());
  plan_.bias.resize(size_t(out_channels), 0.f);
  using namespace winograd;
  plan_.u = taps == 3   ? transform_weights<F4x3>(weight, out_channels, in_channels)
            : taps == 5 ? transform_weights<F4x5>(weight, out_channels, in_channels)
                        : transform_weights<F4x7>(weight, out_channels, in_channels);
}

void WinogradConv::run(const float* x, const float* residual, float* y, int64_t batch, int64_t length,
                       WinogradIsa isa) const {
  if (isa == WinogradIsa::kAuto) isa = best_isa();
  if (!cpu_has(isa)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("WinogradConv: this CPU or build cannot run the {} kernel", name(isa)));
  }
  // Each thread its own scratch, kept between calls: no allocation on the warm path.
  thread_local std::vector<float> scratch;
  const size_t need = size_t(winograd::scratch_floats(plan_.taps, plan_.dilation, plan_.in, plan_.out));
  if (scratch.size() < need) scratch.resize(need);
  const winograd::View view{plan_.u.data(), plan_.bias.data(), plan_.in, plan_.out, plan_.taps, plan_.dilation,
                            plan_.leaky, plan_.alpha, scratch.data()};
  const size_t in_step = size_t(plan_.in * length), out_step = size_t(plan_.out * length);
  for (int64_t n = 0; n < batch; ++n) {
    const float* xn = x + n * in_step;
    const float* rn = residual ? residual + n * out_step : nullptr;
    float* yn = y + n * out_step;
    bool done = false;
#if defined(BRISVOX_WINOGRAD_X86)
    if (isa == WinogradIsa::kAvx512) done = winograd::run_avx512(view, xn, rn, yn, length);
    if (isa == WinogradIsa::kAvx2) done = winograd::run_avx2(view, xn, rn, yn, length);
#endif
    // Channel counts the vector kernels do not tile (not multiples of their widths) run portably.
    if (!done) winograd::run_generic(view, xn, rn, yn, length);
  }
}

std::vector<WinogradIsa> WinogradConv::available() { return supported(); }

const char* WinogradConv::name(WinogradIsa isa) {
  switch (isa) {
    case WinogradIsa::kAuto: return "auto";
    case WinogradIsa::kAvx512: return "avx512";
    case WinogradIsa::kAvx2: return "avx2";
    case WinogradIsa::kGeneric: return "generic";
  }
  return "?";
}

}  // namespace brisvox::piper
