#include "brisvox/models/vad/silero_rates.h"

#include <fmt/format.h>

#include "brisvox/error.h"

namespace brisvox {
namespace {

[[noreturn]] void unsupported(int sample_rate_hz) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("sample rate {} Hz is not supported: Silero VAD runs at 16000 or 8000 Hz "
                          "(resample the audio first)",
                          sample_rate_hz));
}

}  // namespace

int silero_model_rate_hz(int input_rate_hz, int requested_hz) {
  if (requested_hz == 8000 || requested_hz == 16000) return requested_hz;
  if (requested_hz != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("model rate must be 0 (auto), 8000 or 16000, got {}", requested_hz));
  }
  // Every input rate, 8 kHz telephony included, runs the 16 kHz model: on phone audio it finds
  // more of the speech than the 8 kHz model does (docs/TELEPHONY.md, "Phone-band accuracy").
  (void)input_rate_hz;
  return 16000;
}

int silero_chunk_samples(int sample_rate_hz) {
  if (sample_rate_hz == 16000) return 512;
  if (sample_rate_hz == 8000) return 256;
  unsupported(sample_rate_hz);
}

int silero_context_samples(int sample_rate_hz) {
  if (sample_rate_hz == 16000) return 64;
  if (sample_rate_hz == 8000) return 32;
  unsupported(sample_rate_hz);
}

}  // namespace brisvox
