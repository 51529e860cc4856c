// The log-softmax normaliser of a logits vector, fast: the greedy search needs it for every
// sampled token over the whole vocabulary (51864 values for Whisper). With libm's exp it took
// ~270 us per token, a tenth of a batched decoder step; this file is compiled so that the loop is
// vectorised (-O3 -fno-trapping-math, src/models/stt/whisper/CMakeLists.txt): ~60 us.
#pragma once

#include <span>

namespace brisvox::whisper_detail {

// sum_i exp(x_i - max) for logits x_i <= max; -inf, NaN and values more than 87 below max count
// 0. Cephes' expf (range reduction by ln 2, a degree-5 polynomial, relative error below 2e-7)
// with eight partial float sums, added in double at the end. Thread-safe, no allocation.
double sum_exp_below(std::span<const float> x, float max);

}  // namespace brisvox::whisper_detail
