// WhisperDecoder: lane bookkeeping and argument checks; the layouts' storage and Runs are in
// decoder_brisvox.cpp, decoder_sherpa.cpp and decoder_optimum.cpp.
#include "brisvox/models/stt/whisper_decoder.h"

#include <fmt/format.h>

#include <algorithm>

#include "brisvox/error.h"
#include "models/stt/whisper/decoder_backend.h"

namespace brisvox {

void WhisperDecoder::Backend::copy_lane(int, int, bool) {
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("Whisper: beam search and best-of sampling copy decoder lanes, which the {} layout's decoder "
                          "cannot; use a model converted by tools/whisper/convert_ct2.py (brisvox layout), or beam size "
                          "1 and best_of 1",
                          to_string(layout)));
}

void WhisperDecoder::Backend::run_failed(const Ort::Exception& e, int batch) const {
  throw Error(ErrorCode::kRuntime, fmt::format("Whisper decoder step of {} lane(s) on '{}' failed: {}", batch,
                                               session.info().source, e.what()));
}

WhisperDecoder::WhisperDecoder(const WhisperModel& model, const WhisperDecoderConfig& config) {
  const WhisperConfig& c = model.config();
  const WhisperDims& d = c.dims;
  if (config.max_lanes < 1 || config.max_lanes > 256) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper decoder max_lanes must be 1 to 256, got {}", config.max_lanes));
  }
  const int default_tokens = std::min(d.n_text_ctx, 5 + d.n_text_ctx / 2);
  const int tokens = config.max_tokens == 0 ? default_tokens : config.max_tokens;
  if (tokens < 1 || tokens > d.n_text_ctx) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper decoder max_tokens must be 1 to the model's {} positions, got {}", d.n_text_ctx, tokens));
  }
  const int audio = config.max_audio_positions == 0 ? d.n_audio_ctx : config.max_audio_positions;
  if (audio < 1 || audio > d.n_audio_ctx) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper decoder max_audio_positions must be 1 to the model's {}, got {}", d.n_audio_ctx, audio));
  }
  if (model.layout() == WhisperLayout::kOptimum && audio != d.n_audio_ctx) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper decoder: an Optimum model's decoder takes full windows ({} positions); "
                            "max_audio_positions {} is not possible",
                            d.n_audio_ctx, audio));
  }
  auto session = runtime::ModelSession::load_file(model.decoder_path(), config.session);
  switch (model.layout()) {
    case WhisperLayout::kBrisvox:
      backend_ = whisper_detail::make_brisvox_decoder(std::move(session), c, config.max_lanes, tokens, audio);
      break;
    case WhisperLayout::kSherpaOnnx:
      backend_ = whisper_detail::make_sherpa_decoder(std::move(session), c, config.max_lanes, audio);
      break;
    case WhisperLayout::kOptimum:
      backend_ = whisper_detail::make_optimum_decoder(std::move(session), c, config.max_lanes, tokens);
      break;
  }
}

WhisperDecoder::~WhisperDecoder() = default;
WhisperDecoder::WhisperDecoder(WhisperDecoder&&) noexcept = default;
WhisperDecoder& WhisperDecoder::operator=(WhisperDecoder&&) noexcept = default;

int WhisperDecoder::max_lanes() const { return backend_->max_lanes; }
int WhisperDecoder::max_tokens() const { return backend_->max_tokens; }
int WhisperDecoder::max_audio_positions() const { return backend_->max_audio; }
std::size_t WhisperDecoder::bytes_per_lane() const { return backend_->bytes_per_lane(); }
const ModelInfo& WhisperDecoder::model_info() const { return backend_->session.info(); }

WhisperLayout WhisperDecoder::layout() const { return backend_->layout; }

int WhisperDecoder::acquire() {
  Backend& b = *backend_;
  for (int s = 0; s < b.max_lanes; ++s) {
    if (!b.busy[static_cast<std::size_t>(s)]) {
      b.busy[static_cast<std::size_t>(s)] = 1;
      b.positions[static_cast<std::size_t>(s)] = 0;
      b.audio_positions[static_cast<std::size_t>(s)] = 0;
      return s;
    }
  }
  return -1;
}

namespace {

void check_busy(const WhisperDecoder::Backend& b, int lane, const char* what) {
  if (lane < 0 || lane >= b.max_lanes || !b.busy[static_cast<std::size_t>(lane)]) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("WhisperDecoder::{}: lane {} is not a busy lane", what, lane));
  }
}

}  // namespace

WhisperEncoderOutput WhisperDecoder::begin(int lane, int audio_positions) {
  Backend& b = *backend_;
  check_busy(b, lane, "begin");
  if (audio_positions < 1 || audio_positions > b.max_audio ||
      (b.needs_full_audio() && audio_positions != b.config.dims.n_audio_ctx)) {
    throw Error(ErrorCode::kInvalidArgument,
                b.needs_full_audio()
                    ? fmt::format("WhisperDecoder::begin: {} audio positions; this model's decoder takes exactly {}",
                                  audio_positions, b.config.dims.n_audio_ctx)
                    : fmt::format("WhisperDecoder::begin: {} audio positions, the lanes hold 1 to {}", audio_positions,
                                  b.max_audio));
  }
  const WhisperEncoderOutput target = b.encoder_target(lane, audio_positions);
  b.positions[static_cast<std::size_t>(lane)] = 0;
  b.audio_positions[static_cast<std::size_t>(lane)] = audio_positions;
  return target;
}

void WhisperDecoder::release(int lane) {
  Backend& b = *backend_;
  check_busy(b, lane, "release");
  b.busy[static_cast<std::size_t>(lane)] = 0;
  b.audio_positions[static_cast<std::size_t>(lane)] = 0;
}

void WhisperDecoder::copy(int from, int to, bool audio) {
  Backend& b = *backend_;
  check_busy(b, from, "copy from");
  check_busy(b, to, "copy to");
  const auto f = static_cast<std::size_t>(from);
  const auto t = static_cast<std::size_t>(to);
  if (b.audio_positions[f] == 0) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper decoder lane {} has no audio to copy (no begin())", from));
  }
  if (from == to) return;
  b.copy_lane(from, to, audio);
  b.positions[t] = b.positions[f];
  b.audio_positions[t] = b.audio_positions[f];
}

void WhisperDecoder::rewind(int lane) {
  Backend& b = *backend_;
  check_busy(b, lane, "rewind");
  b.positions[static_cast<std::size_t>(lane)] = 0;
}

bool WhisperDecoder::busy(int lane) const {
  return lane >= 0 && lane < backend_->max_lanes && backend_->busy[static_cast<std::size_t>(lane)];
}

int WhisperDecoder::busy_count() const {
  return static_cast<int>(std::count(backend_->busy.begin(), backend_->busy.end(), std::uint8_t{1}));
}

int WhisperDecoder::active_end() const {
  for (int s = backend_->max_lanes; s > 0; --s) {
    if (backend_->busy[static_cast<std::size_t>(s - 1)]) return s;
  }
  return 0;
}

int WhisperDecoder::position(int lane) const {
  check_busy(*backend_, lane, "position");
  return backend_->positions[static_cast<std::size_t>(lane)];
}

void WhisperDecoder::step(std::span<const int> tokens) {
  Backend& b = *backend_;
  const int end = active_end();
  if (end == 0) return;
  if (tokens.size() < static_cast<std::size_t>(end)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("WhisperDecoder::step: {} tokens for {} active lanes", tokens.size(), end));
  }
  for (int s = 0; s < end; ++s) {
    const auto i = static_cast<std::size_t>(s);
    if (!b.busy[i]) continue;
    if (b.audio_positions[i] == 0) {
      throw Error(ErrorCode::kInvalidArgument, fmt::format("WhisperDecoder::step: lane {} has no audio (call begin())", s));
    }
    if (b.positions[i] >= b.max_tokens) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("WhisperDecoder::step: lane {} has fed {} tokens, its cache holds {} (max_tokens)", s,
                              b.positions[i], b.max_tokens));
    }
    if (tokens[i] < 0 || tokens[i] >= b.config.dims.n_vocab) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("WhisperDecoder::step: lane {} feeds token {}, outside [0, {})", s, tokens[i], b.config.dims.n_vocab));
    }
  }
  b.run(end, tokens);
  for (int s = 0; s < end; ++s) {
    if (b.busy[static_cast<std::size_t>(s)]) ++b.positions[static_cast<std::size_t>(s)];
  }
}

std::span<float> WhisperDecoder::logits(int lane) {
  check_busy(*backend_, lane, "logits");
  return backend_->lane_logits(lane);
}

int WhisperDecoder::alignment_heads() const { return backend_->alignment_heads; }

std::span<const float> WhisperDecoder::alignment(int lane) const {
  check_busy(*backend_, lane, "alignment");
  const auto n = static_cast<std::size_t>(backend_->alignment_heads) * static_cast<std::size_t>(backend_->max_audio);
  return {backend_->alignment.data() + static_cast<std::size_t>(lane) * n, n};
}

void WhisperDecoder::cancel_run() noexcept { backend_->session.cancel_run(); }
void WhisperDecoder::clear_cancel() noexcept { backend_->session.clear_cancel(); }

}  // namespace brisvox
