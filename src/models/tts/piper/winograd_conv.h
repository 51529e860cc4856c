// A 1-D convolution (any dilation, "same" padding, 3, 5 or 7 taps) in Winograd form F(4, r), with
// an optional LeakyReLU on its input and an optional residual added to its output: the body of
// HiFi-GAN's ResBlock2 (x + conv(leaky_relu(x))), as the WinogradConv operator runs it
// (winograd_op.h, docs/MODELS.md).
//
// Why not ONNX Runtime's Conv: the Piper decoder's convolutions (32-128 channels, 3-7 taps,
// dilations 1-12) already run at the core's fp32 rate there, so only less arithmetic makes them
// cheaper. F(4, 7) takes 10 products per 4 outputs instead of 28. As separate graph operators the
// transforms cost more than they save (extra passes over multi-megabyte tensors); here each block
// of ~256 samples is transformed, multiplied and transformed back while it sits in L1/L2.
//
// Thread-safety: a WinogradConv is immutable after construction; run() may be called from several
// threads at once (each uses its own thread-local scratch, kept between calls).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace brisvox::piper {

// Which instruction set a run uses; kAuto picks the widest this CPU has.
enum class WinogradIsa { kAuto, kAvx512, kAvx2, kGeneric };

class WinogradConv {
 public:
  // weight [out][in][taps] (ONNX Conv's [O, C, 1, taps] or [O, C, taps]), bias [out] or empty.
  // Throws Error(kInvalidArgument) for taps other than 3, 5, 7, a dilation < 1, or sizes that
  // do not match.
  WinogradConv(std::span<const float> weight, std::span<const float> bias, int64_t out_channels,
               int64_t in_channels, int64_t taps, int64_t dilation,
               std::optional<float> leaky_alpha);

  int64_t in_channels() const { return plan_.in; }
  int64_t out_channels() const { return plan_.out; }
  int64_t taps() const { return plan_.taps; }
  int64_t dilation() const { return plan_.dilation; }

  // x [batch][in][length], residual (optional) [batch][out][length], y [batch][out][length];
  // y may not alias x, may alias residual. y = conv(act(x)) + bias (+ residual).
  void run(const float* x, const float* residual, float* y, int64_t batch, int64_t length,
           WinogradIsa isa = WinogradIsa::kAuto) const;

  // The instruction sets this CPU and build can run (kGeneric always).
  static std::vector<WinogradIsa> available();
  static const char* name(WinogradIsa isa);

  // The layer, prepared (the kernels get a winograd::View of it).
  struct Plan {
    int64_t in = 0, out = 0, taps = 0, dilation = 1;
    bool leaky = false;
    float alpha = 0.f;
    std::vector<float> u;     // the weights transformed: [K][in][out]
    std::vector<float> bias;  // [out], zeros when the Conv had none
  };

 private:
  Plan plan_;
};

namespace winograd {
// A layer as the kernels see it: plain pointers and sizes (no standard-library type crosses
// into the files compiled for AVX-512 or AVX2; winograd_kernel.h says why).
struct View {
  const float* u;     // [K][in][out]
  const float* bias;  // [out]
  int64_t in, out, taps, dilation;
  bool leaky;
  float alpha;
  float* scratch;  // scratch_floats(...) floats
};

// How a kernel with `lanes`-wide vectors cuts a sequence: blocks of `samples` outputs, `tiles`
// tiles each, `rows` input rows (with the halo, rounded up to whole vectors).
struct BlockShape {
  int64_t q, samples, tiles, rows;
};
inline constexpr int64_t kBlockSamples = 256;  // outputs per block, at least (~100-300 KB touched)
constexpr BlockShape block_shape(int64_t m, int64_t taps, int64_t dilation, int64_t lanes) {
  const int64_t q = (kBlockSamples + m * dilation - 1) / (m * dilation);
  const int64_t samples = q * m * dilation;
  return {q, samples, q * dilation, (samples + 2 * (taps / 2) * dilation + lanes - 1) / lanes * lanes};
}
// Scratch floats a kernel needs for one layer (any instruction set: the widest vector is 16).
constexpr int64_t scratch_floats(int64_t taps, int64_t dilation, int64_t in, int64_t out) {
  const int64_t m = 4, k = m + taps - 1, lanes = 16;
  const BlockShape b = block_shape(m, taps, dilation, lanes);
  return b.rows * in + k * b.tiles * (in + out) + (b.samples + lanes) * out;
}

// One per instruction set (winograd_kernel_*.cpp): false when this build has no such kernel or
// the channel counts are not multiples of its vector width.
bool run_avx512(const View& view, const float* x, const float* residual, float* y, int64_t length);
bool run_avx2(const View& view, const float* x, const float* residual, float* y, int64_t length);
void run_generic(const View& view, const float* x, const float* residual, float* y, int64_t length);
}  // namespace winograd

}  // namespace brisvox::piper
