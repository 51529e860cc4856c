// The WinogradConv kernel for AVX2 + FMA (compiled with -mavx2 -mfma; run only where the CPU
// has them, winograd_conv.cpp).
#include <immintrin.h>

#include "models/tts/piper/winograd_kernel.h"

namespace brisvox::piper::winograd {
namespace {

struct Avx2 {
  using V = __m256;
  // 2 x 6 accumulators: 12 of the 16 registers, leaving room for the weights and a broadcast.
  static constexpr int kLanes = 8, kWideOut = 2, kWideTiles = 6, kNarrowOut = 2, kNarrowTiles = 6;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  // x < 0 ? alpha x : x, as ONNX Runtime's LeakyRelu computes it.
  static V leaky(V v, V alpha) {
    return _mm256_blendv_ps(v, _mm256_mul_ps(v, alpha), _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ));
  }
  static V axpy(float c, V v, V a) {
    if (c == 0.f) return a;
    if (c == 1.f) return _mm256_add_ps(a, v);
    if (c == -1.f) return _mm256_sub_ps(a, v);
    return _mm256_fmadd_ps(_mm256_set1_ps(c), v, a);
  }
  // r[i][j] -> r[j][i] for an 8 x 8 block.
  static void transpose(V r[8]) {
    V t[8], s[8];
    for (int i = 0; i < 8; i += 2) {
      t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
      s[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
      s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
      s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
      s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; ++i) {
      r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
      r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
  }
};

}  // namespace

bool run_avx2(const View& view, const float* x, const float* residual, float* y, int64_t length) {
  return run_with<Avx2>(view, x, residual, y, length);
}

}  // namespace brisvox::piper::winograd
