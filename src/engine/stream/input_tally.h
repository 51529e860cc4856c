// What became of a closed stream's input: every sample push() accepted ends in exactly one of
// analysed, failed or discarded. Counted in input-rate samples (what the caller pushed), so that a
// server can check "received = processed + rejected" exactly against what it decoded.
#pragma once

#include <algorithm>
#include <cstdint>

namespace brisvox::engine {

struct InputTally {
  std::uint64_t analysed = 0;   // reached a model run that succeeded
  std::uint64_t failed = 0;     // reached a model run that failed (the stream got a kError event)
  std::uint64_t discarded = 0;  // never reached the model: close() came before the flush completed
};

// `accepted`: input samples push() took. `model_analysed`, `model_failed`: model-rate samples
// given to successful and failed runs (the zero padding of a flushed partial frame excluded).
// `complete`: the stream was flushed and every model sample it produced was analysed (the
// resampler's tail included).
//
// Without resampling the model samples are the input samples: the split is exact. With it, no
// input sample maps to one model sample (the filter spreads each over several), so the input
// consumed is the model samples consumed scaled by the rate ratio (all of it for a complete
// stream), split between analysed and failed in their model proportion.
inline InputTally tally_input(std::uint64_t accepted, std::uint64_t model_analysed, std::uint64_t model_failed,
                              int input_rate_hz, int model_rate_hz, bool complete) {
  InputTally t;
  const std::uint64_t model_consumed = model_analysed + model_failed;
  if (input_rate_hz == model_rate_hz) {
    t.analysed = std::min(model_analysed, accepted);
    t.failed = std::min(model_failed, accepted - t.analysed);
  } else {
    std::uint64_t consumed = accepted;
    if (!complete) {
      const long double scaled =
          static_cast<long double>(model_consumed) * input_rate_hz / static_cast<long double>(model_rate_hz);
      consumed = std::min(accepted, static_cast<std::uint64_t>(scaled));
    }
    if (model_consumed > 0) {
      t.failed = static_cast<std::uint64_t>(static_cast<long double>(consumed) * model_failed /
                                            static_cast<long double>(model_consumed) + 0.5L);
      t.failed = std::min(t.failed, consumed);
    }
    t.analysed = consumed - t.failed;
  }
  t.discarded = accepted - t.analysed - t.failed;
  return t;
}

}  // namespace brisvox::engine
