// The Hugging Face Optimum layout's decoder (decoder_model_merged.onnx): each busy lane runs alone
// (the graph derives positions from the past length, one for its whole batch).
//
// A lane's first step takes use_cache_branch = false: the graph computes the cross-attention
// keys/values from the encoder's hidden states and returns them (present.L.encoder.*), written
// straight into the lane. Later steps take use_cache_branch = true with those as
// past_key_values.L.encoder.* and the lane's cached rows as past_key_values.L.decoder.* of exactly
// `position` rows: packed into a shared scratch each step (O(position) floats). One set of views
// per past length 0..max_tokens over the shared scratches, made by the constructor.
//
// Storage (floats), per lane: hidden_ [lane][n_audio_ctx][state]; cross_ [lane][layer][k|v]
// [head][n_audio_ctx][head_dim]; self_ [lane][layer][k|v][head][max_tokens][head_dim].
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "brisvox/error.h"
#include "models/stt/whisper/decoder_backend.h"
#include "runtime/model_signature.h"

namespace brisvox::whisper_detail {
namespace {

using runtime::kAnyDim;

runtime::ModelSignature optimum_signature(const WhisperDims& d, bool cache_position) {
  const int64_t H = d.n_text_head;
  const int64_t hd = d.head_dim();
  runtime::ModelSignature sig;
  sig.model_kind = "Whisper decoder (Optimum layout, decoder_model_merged)";
  sig.inputs = {{"input_ids", ElementType::kInt64, {kAnyDim, kAnyDim}},
                {"encoder_hidden_states", ElementType::kFloat32, {kAnyDim, kAnyDim, d.n_text_state}}};
  sig.outputs = {{"logits", ElementType::kFloat32, {kAnyDim, kAnyDim, d.n_vocab}}};
  for (int l = 0; l < d.n_text_layer; ++l) {
    for (const char* part : {"decoder", "encoder"}) {
      for (const char* kv : {"key", "value"}) {
        sig.inputs.push_back({fmt::format("past_key_values.{}.{}.{}", l, part, kv), ElementType::kFloat32, {kAnyDim, H, kAnyDim, hd}});
        sig.outputs.push_back({fmt::format("present.{}.{}.{}", l, part, kv), ElementType::kFloat32, {kAnyDim, H, kAnyDim, hd}});
      }
    }
  }
  sig.inputs.push_back({"use_cache_branch", ElementType::kBool, {1}});
  // Exports made with transformers 4.43-4.45 also take the positions.
  if (cache_position) sig.inputs.push_back({"cache_position", ElementType::kInt64, {kAnyDim}});
  return sig;
}

class OptimumDecoder final : public WhisperDecoder::Backend {
 public:
  OptimumDecoder(runtime::ModelSession model_session, const WhisperConfig& c, int lanes, int tokens)
      : Backend(WhisperLayout::kOptimum, std::move(model_session), c, lanes, tokens, c.dims.n_audio_ctx) {
    const WhisperDims& d = config.dims;
    const auto& declared = session.info().inputs;
    cache_position_ = std::any_of(declared.begin(), declared.end(), [](const TensorInfo& t) { return t.name == "cache_position"; });
    runtime::check_signature(session.info(), optimum_signature(d, cache_position_));
    L_ = static_cast<std::size_t>(d.n_text_layer);
    H_ = static_cast<std::size_t>(d.n_text_head);
    hd_ = static_cast<std::size_t>(d.head_dim());
    D_ = static_cast<std::size_t>(d.n_text_state);
    S_ = static_cast<std::size_t>(max_lanes);
    C_ = static_cast<std::size_t>(max_tokens);
    T_ = static_cast<std::size_t>(d.n_audio_ctx);
    hidden_.assign(S_ * T_ * D_, 0.0f);
    cross_.assign(S_ * L_ * 2 * H_ * T_ * hd_, 0.0f);
    self_.assign(S_ * L_ * 2 * H_ * C_ * hd_, 0.0f);
    past_.assign(L_ * 2 * H_ * C_ * hd_ + 1, 0.0f);  // + 1: a valid address for 0-row views
    present_.assign(L_ * 2 * H_ * (C_ + 1) * hd_, 0.0f);
    tok_.assign(S_, 0);
    cache_pos_.assign(S_, 0);
    in_ptrs_.reserve(4 * L_ + 4);
    out_ptrs_.reserve(4 * L_ + 1);

    // Names, in the order the value arrays below use.
    first_in_.add("input_ids");
    first_in_.add("encoder_hidden_states");
    for (std::size_t l = 0; l < L_; ++l) {
      for (const char* kv : {"key", "value"}) first_in_.add(fmt::format("past_key_values.{}.decoder.{}", l, kv));
    }
    for (std::size_t l = 0; l < L_; ++l) {
      for (const char* kv : {"key", "value"}) first_in_.add(fmt::format("past_key_values.{}.encoder.{}", l, kv));
    }
    first_in_.add("use_cache_branch");
    if (cache_position_) first_in_.add("cache_position");
    first_in_.finish();
    first_out_.add("logits");
    for (std::size_t l = 0; l < L_; ++l) {
      for (const char* kv : {"key", "value"}) first_out_.add(fmt::format("present.{}.decoder.{}", l, kv));
    }
    later_out_ = first_out_;
    later_out_.finish();
    for (std::size_t l = 0; l < L_; ++l) {
      for (const char* kv : {"key", "value"}) first_out_.add(fmt::format("present.{}.encoder.{}", l, kv));
    }
    first_out_.finish();

    const auto H = static_cast<int64_t>(H_);
    const auto hd = static_cast<int64_t>(hd_);
    const auto T = static_cast<int64_t>(T_);
    const auto V = static_cast<std::size_t>(d.n_vocab);
    use_cache_[0] = false;
    use_cache_[1] = true;
    branch_[0] = view(&use_cache_[0], 1, std::array<int64_t, 1>{1});
    branch_[1] = view(&use_cache_[1], 1, std::array<int64_t, 1>{1});
    for (std::size_t p = 0; p <= C_; ++p) {
      std::vector<Ort::Value> past, present;
      for (std::size_t k = 0; k < 2 * L_; ++k) {
        past.push_back(view(past_.data() + k * H_ * C_ * hd_, H_ * p * hd_,
                            std::array<int64_t, 4>{1, H, static_cast<int64_t>(p), hd}));
        present.push_back(view(present_.data() + k * H_ * (C_ + 1) * hd_, H_ * (p + 1) * hd_,
                               std::array<int64_t, 4>{1, H, static_cast<int64_t>(p + 1), hd}));
      }
      past_views_.push_back(std::move(past));
      present_views_.push_back(std::move(present));
    }
    for (std::size_t k = 0; k < 2 * L_; ++k) {
      no_encoder_past_.push_back(view(past_.data(), 0, std::array<int64_t, 4>{1, H, 0, hd}));
    }
    for (std::size_t s = 0; s < S_; ++s) {
      tokens_.push_back(view(tok_.data() + s, 1, std::array<int64_t, 2>{1, 1}));
      cache_position_views_.push_back(view(cache_pos_.data() + s, 1, std::array<int64_t, 1>{1}));
      hidden_views_.push_back(view(hidden_.data() + s * T_ * D_, T_ * D_, std::array<int64_t, 3>{1, T, static_cast<int64_t>(D_)}));
      logits_views_.push_back(view(logits.data() + s * V, V, std::array<int64_t, 3>{1, 1, d.n_vocab}));
      for (std::size_t k = 0; k < 2 * L_; ++k) {
        cross_views_.push_back(view(cross_.data() + (s * 2 * L_ + k) * H_ * T_ * hd_, H_ * T_ * hd_,
                                    std::array<int64_t, 4>{1, H, T, hd}));
      }
    }
  }

  bool needs_full_audio() const override { return true; }

  WhisperEncoderOutput encoder_target(int lane, int) override {
    return {hidden_.data() + static_cast<std::size_t>(lane) * T_ * D_, T_ * D_, static_cast<int>(T_)};
  }

  void run(int end, std::span<const int> tokens) override {
    std::vector<const OrtValue*>& in = in_ptrs_;
    std::vector<OrtValue*>& out = out_ptrs_;
    for (std::size_t s = 0; s < static_cast<std::size_t>(end); ++s) {
      if (!busy[s]) continue;
      const auto p = static_cast<std::size_t>(positions[s]);
      tok_[s] = tokens[s];
      cache_pos_[s] = positions[s];
      const bool first = p == 0;
      if (!first) {
        // Pack the lane's rows [0, p) of every (layer, k|v, head) into the scratch as [1, H, p, hd].
        for (std::size_t k = 0; k < 2 * L_; ++k) {
          for (std::size_t h = 0; h < H_; ++h) {
            const float* src = self_.data() + ((s * 2 * L_ + k) * H_ + h) * C_ * hd_;
            std::memcpy(past_.data() + k * H_ * C_ * hd_ + h * p * hd_, src, p * hd_ * sizeof(float));
          }
        }
      }
      in.clear();
      out.clear();
      in.push_back(tokens_[s]);
      in.push_back(hidden_views_[s]);
      for (std::size_t k = 0; k < 2 * L_; ++k) in.push_back(past_views_[p][k]);
      for (std::size_t k = 0; k < 2 * L_; ++k) in.push_back(first ? no_encoder_past_[k] : cross_views_[s * 2 * L_ + k]);
      in.push_back(branch_[first ? 0 : 1]);
      if (cache_position_) in.push_back(cache_position_views_[s]);
      out.push_back(logits_views_[s]);
      for (std::size_t k = 0; k < 2 * L_; ++k) out.push_back(present_views_[p][k]);
      if (first) {
        for (std::size_t k = 0; k < 2 * L_; ++k) out.push_back(cross_views_[s * 2 * L_ + k]);
      }
      const Names& out_names = first ? first_out_ : later_out_;
      try {
        Ort::ThrowOnError(Ort::GetApi().Run(session.session(), session.run_options(), first_in_.ptrs.data(), in.data(),
                                            in.size(), out_names.ptrs.data(), out.size(), out.data()));
      } catch (const Ort::Exception& ex) {
        run_failed(ex, 1);
      }
      // Row p of present [1, H, p + 1, hd] -> the lane's cache.
      for (std::size_t k = 0; k < 2 * L_; ++k) {
        for (std::size_t h = 0; h < H_; ++h) {
          const float* src = present_.data() + k * H_ * (C_ + 1) * hd_ + (h * (p + 1) + p) * hd_;
          std::memcpy(self_.data() + ((s * 2 * L_ + k) * H_ + h) * C_ * hd_ + p * hd_, src, hd_ * sizeof(float));
        }
      }
    }
  }

  std::size_t bytes_per_lane() const override {
    return sizeof(float) * (T_ * D_ + 2 * L_ * D_ * (T_ + C_) + static_cast<std::size_t>(config.dims.n_vocab)) +
           2 * sizeof(int64_t);
  }

 private:
  bool cache_position_ = false;
  std::size_t L_ = 0, H_ = 0, hd_ = 0, D_ = 0, S_ = 0, C_ = 0, T_ = 0;
  std::vector<float> hidden_;
  std::vector<float> cross_;
  std::vector<float> self_;
  std::vector<float> past_;     // [layer][k|v] blocks of [H][p][hd], packed per step
  std::vector<float> present_;  // [layer][k|v] blocks of [H][p + 1][hd]
  std::vector<int64_t> tok_;
  std::vector<int64_t> cache_pos_;
  bool use_cache_[2] = {false, true};
  Names first_in_;
  Names first_out_;
  Names later_out_;
  Ort::Value branch_[2] = {Ort::Value(nullptr), Ort::Value(nullptr)};
  std::vector<std::vector<Ort::Value>> past_views_;     // [p][layer * 2 + kv]
  std::vector<std::vector<Ort::Value>> present_views_;  // [p][layer * 2 + kv], p + 1 rows
  std::vector<Ort::Value> no_encoder_past_;             // 0-row placeholders for the first step
  std::vector<Ort::Value> tokens_;
  std::vector<Ort::Value> cache_position_views_;
  std::vector<Ort::Value> hidden_views_;
  std::vector<Ort::Value> logits_views_;
  std::vector<Ort::Value> cross_views_;  // [lane * 2L + layer * 2 + kv]
  std::vector<const OrtValue*> in_ptrs_;
  std::vector<OrtValue*> out_ptrs_;
};

}  // namespace

std::unique_ptr<WhisperDecoder::Backend> make_optimum_decoder(runtime::ModelSession session, const WhisperConfig& config,
                                                              int lanes, int tokens) {
  return std::make_unique<OptimumDecoder>(std::move(session), config, lanes, tokens);
}

}  // namespace brisvox::whisper_detail
