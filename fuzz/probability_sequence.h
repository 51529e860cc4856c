// Speech probabilities from fuzz bytes, for the state machines that consume them (segmenters, the
// turn detector). Most bytes map evenly onto [0, 1]; the top few give the values where a state
// machine decides: each threshold as a float, and the floats just either side of it.
#pragma once

#include <cmath>
#include <cstdint>

namespace brisvox::fuzz {

class ProbabilityMap {
 public:
  ProbabilityMap(double threshold, double neg_threshold)
      : threshold_(static_cast<float>(threshold)), neg_threshold_(static_cast<float>(neg_threshold)) {}

  float operator()(std::uint8_t byte) const {
    if (byte < kFirstSpecial) return static_cast<float>(byte) / static_cast<float>(kFirstSpecial - 1);
    switch (byte - kFirstSpecial) {
      case 0: return threshold_;
      case 1: return std::nextafter(threshold_, 0.0f);
      case 2: return std::nextafter(threshold_, 1.0f);
      case 3: return neg_threshold_;
      case 4: return std::nextafter(neg_threshold_, 0.0f);
      case 5: return std::nextafter(neg_threshold_, 1.0f);
      case 6: return 0.0f;
      default: return 1.0f;
    }
  }

 private:
  static constexpr int kFirstSpecial = 248;
  float threshold_;
  float neg_threshold_;
};

}  // namespace brisvox::fuzz
