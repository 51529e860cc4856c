// The WinogradConv kernel for AVX-512F (compiled with -mavx512f -mfma; run only where the CPU
// has them, winograd_conv.cpp).
#include <immintrin.h>

#include "models/tts/piper/winograd_kernel.h"

namespace brisvox::piper::winograd {
namespace {

struct Avx512 {
  using V = __m512;
  // 4 x 6 or 2 x 12 accumulators: 24 of the 32 registers, room left for the weights and a
  // broadcast. 64 output channels at a time where they divide (the V rows read once per 64).
  static constexpr int kLanes = 16, kWideOut = 4, kWideTiles = 6, kNarrowOut = 2, kNarrowTiles = 12;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  // x < 0 ? alpha x : x, as ONNX Runtime's LeakyRelu computes it.
  static V leaky(V v, V alpha) {
    return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), v, alpha);
  }
  static V axpy(float c, V v, V a) {
    if (c == 0.f) return a;
    if (c == 1.f) return _mm512_add_ps(a, v);
    if (c == -1.f) return _mm512_sub_ps(a, v);
    return _mm512_fmadd_ps(_mm512_set1_ps(c), v, a);
  }
  // r[i][j] -> r[j][i] for a 16 x 16 block.
  static void transpose(V r[16]) {
    V t[16];
    for (int i = 0; i < 16; i += 2) {
      t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
      t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
      const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
      const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
      r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
      r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
      r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
      r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int i = 0; i < 4; ++i) {
      t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
      t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
      t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
      t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; ++i) {
      r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
      r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
      r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
      r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
    }
  }
};

}  // namespace

bool run_avx512(const View& view, const float* x, const float* residual, float* y, int64_t length) {
  return run_with<Avx512>(view, x, residual, y, length);
}

}  // namespace brisvox::piper::winograd
