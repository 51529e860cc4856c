#include "cli/vad_params.h"

#include <fmt/format.h>

#include "brisvox/error.h"

namespace brisvox::cli {

void add_model_rate_option(CLI::App& app, int& model_rate_hz) {
  app.add_option("--model-rate", model_rate_hz,
                 "Rate the VAD model runs at, 8000 or 16000 (default: 16000 for every input; 8 kHz audio is "
                 "upsampled, which finds more speech on phone audio than 8000 does)");
}

void check_model_rate(int model_rate_hz) {
  if (model_rate_hz != 0 && model_rate_hz != 8000 && model_rate_hz != 16000) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("--model-rate must be 8000 or 16000, got {}", model_rate_hz));
  }
}

void add_vad_params(CLI::App& app, SegmenterParams& p) {
  app.add_option("--threshold", p.threshold, "Speech probability that starts speech")->capture_default_str();
  app.add_option("--neg-threshold", p.neg_threshold,
                 "Probability below which speech may end (default: max(threshold - 0.15, 0.01))");
  app.add_option("--min-speech-ms", p.min_speech_ms, "Shorter segments are dropped")->capture_default_str();
  app.add_option("--max-speech-s", p.max_speech_s, "Longer segments are split (default: no limit)");
  app.add_option("--min-silence-ms", p.min_silence_ms, "Silence that ends a segment")->capture_default_str();
  app.add_option("--speech-pad-ms", p.speech_pad_ms, "Padding added to each side of a segment")->capture_default_str();
  app.add_option("--min-silence-at-max-speech-ms", p.min_silence_at_max_speech_ms,
                 "Silence that may serve as a split point of an over-long segment")->capture_default_str();
  app.add_option("--use-max-poss-sil-at-max-speech", p.use_max_poss_sil_at_max_speech,
                 "Split an over-long segment at its longest silence (true) or its last (false)")
      ->capture_default_str();
}

}  // namespace brisvox::cli
