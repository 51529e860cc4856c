// The sherpa-onnx layout's decoder: its graph takes one `offset` for the whole batch, so each busy
// lane runs alone (batch 1) at its own position.
//
// Storage (floats), one contiguous region per lane:
//   self_  [lane][k|v][layer][n_text_ctx][state]       bound in place as the graph's
//                                                       in_n_layer_self_{k,v}_cache [L, 1, ctx, D]
//   cross_ [lane][k|v][layer][positions][state]         packed to the sequence's own length (the
//                                                       graph attends to every row it is given);
//                                                       views made by begin()
// The graph writes its whole updated caches; they go to a shared scratch, and the one new row per
// layer is copied back into the lane.
#include <fmt/format.h>

#include <cstring>
#include <optional>

#include "brisvox/error.h"
#include "models/stt/whisper/decoder_backend.h"
#include "runtime/model_signature.h"

namespace brisvox::whisper_detail {
namespace {

using runtime::kAnyDim;

runtime::ModelSignature sherpa_signature(const WhisperDims& d) {
  const int64_t L = d.n_text_layer;
  const int64_t D = d.n_text_state;
  runtime::ModelSignature sig;
  sig.model_kind = "Whisper decoder (sherpa-onnx layout)";
  sig.inputs = {{"tokens", ElementType::kInt64, {kAnyDim, kAnyDim}},
                {"in_n_layer_self_k_cache", ElementType::kFloat32, {L, kAnyDim, d.n_text_ctx, D}},
                {"in_n_layer_self_v_cache", ElementType::kFloat32, {L, kAnyDim, d.n_text_ctx, D}},
                {"n_layer_cross_k", ElementType::kFloat32, {L, kAnyDim, kAnyDim, D}},
                {"n_layer_cross_v", ElementType::kFloat32, {L, kAnyDim, kAnyDim, D}},
                {"offset", ElementType::kInt64, {1}}};
  sig.outputs = {{"logits", ElementType::kFloat32, {kAnyDim, kAnyDim, d.n_vocab}},
                 {"out_n_layer_self_k_cache", ElementType::kFloat32, {L, kAnyDim, d.n_text_ctx, D}},
                 {"out_n_layer_self_v_cache", ElementType::kFloat32, {L, kAnyDim, d.n_text_ctx, D}}};
  return sig;
}

class SherpaDecoder final : public WhisperDecoder::Backend {
 public:
  SherpaDecoder(runtime::ModelSession model_session, const WhisperConfig& c, int lanes, int audio)
      : Backend(WhisperLayout::kSherpaOnnx, std::move(model_session), c, lanes, c.dims.n_text_ctx, audio) {
    const WhisperDims& d = config.dims;
    const auto binding = runtime::check_signature(session.info(), sherpa_signature(d));
    for (const auto& n : binding.input_names) in_names_.add(n);
    for (const auto& n : binding.output_names) out_names_.add(n);
    in_names_.finish();
    out_names_.finish();
    L_ = static_cast<std::size_t>(d.n_text_layer);
    D_ = static_cast<std::size_t>(d.n_text_state);
    S_ = static_cast<std::size_t>(max_lanes);
    C_ = static_cast<std::size_t>(d.n_text_ctx);
    T_ = static_cast<std::size_t>(max_audio);
    self_.assign(S_ * 2 * L_ * C_ * D_, 0.0f);
    cross_.assign(S_ * 2 * L_ * T_ * D_, 0.0f);
    scratch_.assign(2 * L_ * C_ * D_, 0.0f);
    tok_.assign(S_, 0);
    off_.assign(S_, 0);
    const auto L = static_cast<int64_t>(L_);
    const auto C = static_cast<int64_t>(C_);
    const auto D = static_cast<int64_t>(D_);
    const auto V = static_cast<std::size_t>(d.n_vocab);
    for (std::size_t s = 0; s < S_; ++s) {
      tokens_.push_back(view(tok_.data() + s, 1, std::array<int64_t, 2>{1, 1}));
      offsets_.push_back(view(off_.data() + s, 1, std::array<int64_t, 1>{1}));
      for (std::size_t kv = 0; kv < 2; ++kv) {
        self_in_.push_back(view(self_.data() + (s * 2 + kv) * L_ * C_ * D_, L_ * C_ * D_, std::array<int64_t, 4>{L, 1, C, D}));
      }
      logits_out_.push_back(view(logits.data() + s * V, V, std::array<int64_t, 3>{1, 1, d.n_vocab}));
      cross_in_.emplace_back();
      cross_in_.emplace_back();
    }
    for (std::size_t kv = 0; kv < 2; ++kv) {
      self_out_.push_back(view(scratch_.data() + kv * L_ * C_ * D_, L_ * C_ * D_, std::array<int64_t, 4>{L, 1, C, D}));
    }
  }

  WhisperEncoderOutput encoder_target(int lane, int audio) override {
    const auto s = static_cast<std::size_t>(lane);
    const auto T = static_cast<std::size_t>(audio);
    float* base = cross_.data() + s * 2 * L_ * T_ * D_;
    // The graph's n_layer_cross_{k,v} [L, 1, T, D]: packed to this sequence's length. Making the
    // two views allocates (a few small ONNX Runtime objects), once per sequence.
    for (std::size_t kv = 0; kv < 2; ++kv) {
      cross_in_[s * 2 + kv] = view(base + kv * L_ * T * D_, L_ * T * D_,
                                   std::array<int64_t, 4>{static_cast<int64_t>(L_), 1, audio, static_cast<int64_t>(D_)});
    }
    return {base, T * D_, audio};
  }

  void run(int end, std::span<const int> tokens) override {
    for (std::size_t s = 0; s < static_cast<std::size_t>(end); ++s) {
      if (!busy[s]) continue;
      tok_[s] = tokens[s];
      off_[s] = positions[s];
      // Inputs in signature order: tokens, self k, self v, cross k, cross v, offset. The C API
      // takes arrays of value pointers, so each lane's own views are passed without moving them.
      const OrtValue* in[6] = {tokens_[s], self_in_[s * 2], self_in_[s * 2 + 1], *cross_in_[s * 2],
                               *cross_in_[s * 2 + 1], offsets_[s]};
      OrtValue* out[3] = {logits_out_[s], self_out_[0], self_out_[1]};
      try {
        Ort::ThrowOnError(Ort::GetApi().Run(session.session(), session.run_options(), in_names_.ptrs.data(), in, 6,
                                            out_names_.ptrs.data(), 3, out));
      } catch (const Ort::Exception& ex) {
        run_failed(ex, 1);
      }
      const auto p = static_cast<std::size_t>(positions[s]);
      for (std::size_t kv = 0; kv < 2; ++kv) {
        for (std::size_t l = 0; l < L_; ++l) {
          const std::size_t row = (kv * L_ + l) * C_ * D_ + p * D_;
          std::memcpy(self_.data() + s * 2 * L_ * C_ * D_ + row, scratch_.data() + row, D_ * sizeof(float));
        }
      }
    }
  }

  std::size_t bytes_per_lane() const override {
    return sizeof(float) * (2 * L_ * D_ * (C_ + T_) + static_cast<std::size_t>(config.dims.n_vocab)) +
           2 * sizeof(int64_t);
  }

 private:
  std::size_t L_ = 0, D_ = 0, S_ = 0, C_ = 0, T_ = 0;
  std::vector<float> self_;
  std::vector<float> cross_;
  std::vector<float> scratch_;  // [k|v][layer][ctx][state]: the graph's cache outputs
  std::vector<int64_t> tok_;
  std::vector<int64_t> off_;
  Names in_names_;
  Names out_names_;
  std::vector<Ort::Value> tokens_;
  std::vector<Ort::Value> offsets_;
  std::vector<Ort::Value> self_in_;                // [lane * 2 + kv]
  std::vector<std::optional<Ort::Value>> cross_in_;  // [lane * 2 + kv], made by encoder_target
  std::vector<Ort::Value> logits_out_;
  std::vector<Ort::Value> self_out_;               // [kv]
};

}  // namespace

std::unique_ptr<WhisperDecoder::Backend> make_sherpa_decoder(runtime::ModelSession session, const WhisperConfig& config,
                                                             int lanes, int audio) {
  return std::make_unique<SherpaDecoder>(std::move(session), config, lanes, audio);
}

}  // namespace brisvox::whisper_detail
