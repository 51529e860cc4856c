// The WinogradConv kernel, written once over a vector type (Isa: Avx512, Avx2 or Scalar below)
// and compiled once per instruction set (winograd_kernel_*.cpp, each with its own -m flags).
// Included only by those files.
//
// Per batch item, the output is cut into blocks of Lb = q m d samples (m = 4 outputs per tile,
// d the dilation). A block holds q d tiles: tile (u, rho) computes outputs
// ta + u m d + rho + d j, j < m, from the inputs ta + u m d + rho + d (j' - r/2), j' < K = m + r - 1.
// For each block:
//   1. its inputs (with the halo, zeros outside the sequence) are copied channels-last, L x L
//      transposes, the LeakyReLU applied on the way;
//   2. input transform: V[k][tile][c] = sum_j BT[k][j] x[tile's j-th input][c];
//   3. products: M[k][tile][o] = sum_c V[k][tile][c] U[k][c][o], a register-blocked kernel of
//      R tiles by kOv vectors of output channels;
//   4. output transform: y[tile's j-th output][o] = sum_k AT[j][k] M[k][tile][o] + bias[o],
//      transposed back to channels-first with the residual added.
// Everything a block touches (~100-300 KB) stays in L1/L2; the only passes over the whole tensors
// are reading x (and the residual) once and writing y once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "models/tts/piper/winograd_conv.h"
#include "models/tts/piper/winograd_matrices.h"

namespace brisvox::piper::winograd {
// Everything here has internal linkage, and the kernel uses no standard-library template: a
// function compiled with -mavx512f must never be what the linker picks for an inline function
// that other files call too (a std::vector<float> method, std::min), or a CPU without AVX-512
// would run it. The scratch memory comes from winograd_conv.cpp.
namespace {

int64_t min_of(int64_t a, int64_t b) { return a < b ? a : b; }
int64_t clamp_of(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

// kOv output vectors by R tiles per micro-kernel call: kOv R accumulators in registers.
template <class Isa, class F, int kOv, int R>
class Kernel {
  using V = typename Isa::V;
  static constexpr int L = Isa::kLanes;
  static constexpr int m = F::m, K = F::K, h = F::r / 2;

 public:
  Kernel(const View& view, int64_t length)
      : p_(view), C_(view.in), O_(view.out), d_(view.dilation), T_(length) {
    const BlockShape b = block_shape(m, F::r, d_, L);
    q_ = b.q;
    Lb_ = b.samples;
    tiles_ = b.tiles;
    halo_ = h * d_;
    rows_ = b.rows;
  }

  void run(const float* x, const float* residual, float* y) {
    xt_ = p_.scratch;
    v_ = xt_ + rows_ * C_;
    mk_ = v_ + K * tiles_ * C_;
    yt_ = mk_ + K * tiles_ * O_;
    for (int64_t ta = 0; ta < T_; ta += Lb_) {
      load_block(x, ta);
      input_transform();
      products();
      output_transform();
      store_block(residual, y, ta);
    }
  }

 private:
  // 1. xt[i][c] = act(x[c][ta - halo + i]), zeros outside [0, T).
  void load_block(const float* x, int64_t ta) {
    const int64_t t_lo = ta - halo_;
    const V alpha = Isa::set1(p_.alpha);
    for (int64_t i0 = 0; i0 < rows_; i0 += L) {
      const int64_t t0 = t_lo + i0;
      const int64_t lo = clamp_of(-t0, 0, L), hi = clamp_of(T_ - t0, 0, L);
      for (int64_t c0 = 0; c0 < C_; c0 += L) {
        V r[L];
        for (int c = 0; c < L; ++c) {
          const float* row = x + (c0 + c) * T_;
          // The next block's line of this row: ~C streams at once are more than the hardware
          // prefetchers follow (the loads here were ~1/3 of a 32-channel layer's time).
          if (t0 + Lb_ + L <= T_) __builtin_prefetch(row + t0 + Lb_);
          r[c] = lo == 0 && hi == L ? Isa::load(row + t0) : load_part(row, t0, lo, hi);
          if (p_.leaky) r[c] = Isa::leaky(r[c], alpha);
        }
        Isa::transpose(r);
        for (int i = 0; i < L; ++i) Isa::store(xt_ + (i0 + i) * C_ + c0, r[i]);
      }
    }
  }

  // 2. V[k][tile][c] = sum_j BT[k][j] xt[p + d j][c], p = u m d + rho.
  void input_transform() {
    for (int64_t u = 0; u < q_; ++u) {
      for (int64_t rho = 0; rho < d_; ++rho) {
        const int64_t tile = u * d_ + rho, p = u * m * d_ + rho;
        for (int64_t cv = 0; cv < C_; cv += L) {
          V in[K];
#pragma GCC unroll 16
          for (int j = 0; j < K; ++j) in[j] = Isa::load(xt_ + (p + d_ * j) * C_ + cv);
#pragma GCC unroll 16
          for (int k = 0; k < K; ++k) {
            V a = Isa::zero();
#pragma GCC unroll 16
            for (int j = 0; j < K; ++j) a = Isa::axpy(F::bt[k * K + j], in[j], a);
            Isa::store(v_ + (k * tiles_ + tile) * C_ + cv, a);
          }
        }
      }
    }
  }

  // 3. M[k] = V[k] @ U[k], R tiles by kOv vectors of outputs per call.
  void products() {
    for (int k = 0; k < K; ++k) {
      const float* vk = v_ + k * tiles_ * C_;
      const float* uk = p_.u + size_t(k) * C_ * O_;
      float* mk = mk_ + k * tiles_ * O_;
      for (int64_t o0 = 0; o0 < O_; o0 += kOv * L) {
        int64_t t = 0;
        for (; t + R <= tiles_; t += R) micro<R>(vk + t * C_, uk + o0, mk + t * O_ + o0);
        for (; t < tiles_; ++t) micro<1>(vk + t * C_, uk + o0, mk + t * O_ + o0);
      }
    }
  }

  template <int Rows>
  void micro(const float* v, const float* u, float* out) const {
    V acc[Rows][kOv];
#pragma GCC unroll 32
    for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 8
      for (int ov = 0; ov < kOv; ++ov) acc[r][ov] = Isa::zero();
    for (int64_t c = 0; c < C_; ++c) {
      V w[kOv];
#pragma GCC unroll 8
      for (int ov = 0; ov < kOv; ++ov) w[ov] = Isa::load(u + c * O_ + ov * L);
#pragma GCC unroll 32
      for (int r = 0; r < Rows; ++r) {
        const V s = Isa::set1(v[r * C_ + c]);
#pragma GCC unroll 8
        for (int ov = 0; ov < kOv; ++ov) acc[r][ov] = Isa::fma(s, w[ov], acc[r][ov]);
      }
    }
#pragma GCC unroll 32
    for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 8
      for (int ov = 0; ov < kOv; ++ov) Isa::store(out + r * O_ + ov * L, acc[r][ov]);
  }

  // 4. yt[p + d j][o] = sum_k AT[j][k] M[k][tile][o] + bias[o].
  void output_transform() {
    for (int64_t u = 0; u < q_; ++u) {
      for (int64_t rho = 0; rho < d_; ++rho) {
        const int64_t tile = u * d_ + rho, p = u * m * d_ + rho;
        for (int64_t ov = 0; ov < O_; ov += L) {
          V mv[K];
#pragma GCC unroll 16
          for (int k = 0; k < K; ++k) mv[k] = Isa::load(mk_ + (k * tiles_ + tile) * O_ + ov);
          const V b = Isa::load(p_.bias + ov);
#pragma GCC unroll 8
          for (int j = 0; j < m; ++j) {
            V a = b;
#pragma GCC unroll 16
            for (int k = 0; k < K; ++k) a = Isa::axpy(F::at[j * K + k], mv[k], a);
            Isa::store(yt_ + (p + d_ * j) * O_ + ov, a);
          }
        }
      }
    }
  }

  // 5. y[o][ta + i] = yt[i][o] (+ residual[o][ta + i]) for the block's samples inside [0, T).
  void store_block(const float* residual, float* y, int64_t ta) {
    const int64_t n = min_of(Lb_, T_ - ta);
    for (int64_t i0 = 0; i0 < n; i0 += L) {
      const int cnt = int(min_of(L, n - i0));
      for (int64_t o0 = 0; o0 < O_; o0 += L) {
        V r[L];
        for (int i = 0; i < L; ++i) r[i] = Isa::load(yt_ + (i0 + i) * O_ + o0);
        Isa::transpose(r);
        for (int o = 0; o < L; ++o) {
          const size_t at = size_t((o0 + o) * T_ + ta + i0);
          if (ta + i0 + Lb_ + L <= T_) {
            if (residual) __builtin_prefetch(residual + at + Lb_);
            __builtin_prefetch(y + at + Lb_, 1);
          }
          if (cnt == L) {
            V out = r[o];
            if (residual) out = Isa::add(out, Isa::load(residual + at));
            Isa::store(y + at, out);
          } else {
            V out = r[o];
            if (residual) out = Isa::add(out, load_part(residual + at, 0, 0, cnt));
            alignas(64) float part[L];
            Isa::store(part, out);
            std::memcpy(y + at, part, sizeof(float) * size_t(cnt));
          }
        }
      }
    }
  }

  // base[offset + i] for lo <= i < hi, zeros elsewhere: reads nothing outside the sequence.
  static V load_part(const float* base, int64_t offset, int64_t lo, int64_t hi) {
    alignas(64) float part[L] = {};
    for (int64_t i = lo; i < hi; ++i) part[i] = base[offset + i];
    return Isa::load(part);
  }

  const View& p_;
  const int64_t C_, O_, d_, T_;
  int64_t q_ = 0, Lb_ = 0, tiles_ = 0, halo_ = 0, rows_ = 0;
  float *xt_ = nullptr, *v_ = nullptr, *mk_ = nullptr, *yt_ = nullptr;
};

template <class Isa, int kOv, int R>
bool run_form(const View& view, const float* x, const float* residual, float* y, int64_t length) {
  switch (view.taps) {
    case 3: Kernel<Isa, F4x3, kOv, R>(view, length).run(x, residual, y); return true;
    case 5: Kernel<Isa, F4x5, kOv, R>(view, length).run(x, residual, y); return true;
    case 7: Kernel<Isa, F4x7, kOv, R>(view, length).run(x, residual, y); return true;
    default: return false;
  }
}

// Runs plan over one batch item with the form for its tap count, and the wide micro-kernel when
// the output channels divide into it (fewer passes over V); false if the channel counts are not
// multiples of Isa's vector width times its narrow output block.
template <class Isa>
bool run_with(const View& view, const float* x, const float* residual, float* y, int64_t length) {
  constexpr int L = Isa::kLanes;
  if (view.in % L != 0) return false;
  if (view.out % (L * Isa::kWideOut) == 0) {
    return run_form<Isa, Isa::kWideOut, Isa::kWideTiles>(view, x, residual, y, length);
  }
  if (view.out % (L * Isa::kNarrowOut) == 0) {
    return run_form<Isa, Isa::kNarrowOut, Isa::kNarrowTiles>(view, x, residual, y, length);
  }
  return false;
}

// One float per "vector": the portable kernel, for any CPU and any channel count.
struct Scalar {
  using V = float;
  static constexpr int kLanes = 1, kWideOut = 1, kWideTiles = 4, kNarrowOut = 1, kNarrowTiles = 4;
  static V zero() { return 0.f; }
  static V set1(float v) { return v; }
  static V load(const float* p) { return *p; }
  static void store(float* p, V v) { *p = v; }
  static V add(V a, V b) { return a + b; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static V leaky(V v, V alpha) { return v < 0.f ? v * alpha : v; }
  // a + c v, with c a compile-time constant of the transforms: 0 and +-1 cost nothing.
  static V axpy(float c, V v, V a) { return c == 0.f ? a : c == 1.f ? a + v : c == -1.f ? a - v : a + c * v; }
  static void transpose(V*) {}
};

}  // namespace
}  // namespace brisvox::piper::winograd
