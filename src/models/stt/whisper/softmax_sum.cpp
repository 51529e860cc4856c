#include "models/stt/whisper/softmax_sum.h"

#include <bit>
#include <cstddef>
#include <cstdint>

namespace brisvox::whisper_detail {
namespace {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kLowest = -87.0f;  // exp(-87) ~ 1.6e-38, about the smallest normal float

// exp(v - max), written without branches or calls so that a loop of it vectorises.
inline float exp_shifted(float v, float max) {
  float d = v - max;
  const bool valid = d > kLowest;  // false for NaN and -inf too
  d = valid ? d : kLowest;
  const int k = static_cast<int>(d * kLog2e - 0.5f);  // d <= 0: truncation rounds to nearest
  const float fk = static_cast<float>(k);
  const float r = (d - fk * kLn2Hi) - fk * kLn2Lo;  // |r| <= ln 2 / 2
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>(static_cast<std::uint32_t>(k + 127) << 23);
  return valid ? e * scale : 0.0f;
}

}  // namespace

double sum_exp_below(std::span<const float> x, float max) {
  constexpr std::size_t kLanes = 8;
  float acc[kLanes] = {};
  const std::size_t n = x.size();
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) acc[j] += exp_shifted(x[i + j], max);
  }
  double sum = 0.0;
  for (; i < n; ++i) sum += exp_shifted(x[i], max);
  for (float a : acc) sum += a;
  return sum;
}

}  // namespace brisvox::whisper_detail
