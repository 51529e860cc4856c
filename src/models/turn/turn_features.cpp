#include "brisvox/models/turn/turn_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "brisvox/error.h"
#include "brisvox/models/turn/smart_turn.h"

namespace brisvox {

TurnFeatures::TurnFeatures() : window_(kTurnWindowSamples, 0.0f) {}

void TurnFeatures::compute(std::span<const float> audio, std::span<float> out) {
  if (out.size() != static_cast<std::size_t>(kTurnFeatureValues)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("TurnFeatures::compute: output holds {} values, expected {} ([80, 800])", out.size(),
                            kTurnFeatureValues));
  }
  const std::size_t n = std::min(audio.size(), static_cast<std::size_t>(kTurnWindowSamples));
  const std::size_t pad = window_.size() - n;
  std::fill(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(pad), 0.0f);
  std::copy(audio.end() - static_cast<std::ptrdiff_t>(n), audio.end(), window_.begin() + static_cast<std::ptrdiff_t>(pad));
  // Mean and variance over the whole padded window (the zeros count), in double as numpy does.
  double sum = 0.0;
  for (float x : window_) sum += x;
  const double mean = sum / static_cast<double>(window_.size());
  double var = 0.0;
  for (float x : window_) var += (x - mean) * (x - mean);
  var /= static_cast<double>(window_.size());
  if (!std::isfinite(var)) throw Error(ErrorCode::kBadAudio, "turn audio holds NaN or Inf samples");
  const double scale = 1.0 / std::sqrt(var + 1e-7);
  for (float& x : window_) x = static_cast<float>((x - mean) * scale);
  mel_.compute(window_, out);
}

}  // namespace brisvox
