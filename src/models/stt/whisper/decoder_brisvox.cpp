// The brisvox layout's decoder: every active lane in one Run, caches bound in place.
//
// Storage (floats), laid out so that the first b lanes of every per-layer tensor are contiguous
// and a Run binds them without a copy:
//   self_  [layer][k|v][lane][head][max_tokens][head_dim]
//   cross_ [layer][k|v][lane][head][max_audio][head_dim]
// One set of Ort::Values per batch size b (1..max_lanes) views the first b lanes.
#include <fmt/format.h>

#include <cstring>

#include "base/zeroed_buffer.h"
#include "brisvox/error.h"
#include "models/stt/whisper/decoder_backend.h"
#include "runtime/model_signature.h"

namespace brisvox::whisper_detail {
namespace {

using runtime::kAnyDim;

runtime::ModelSignature brisvox_signature(const WhisperDims& d) {
  runtime::ModelSignature sig;
  sig.model_kind = "Whisper decoder step (brisvox layout)";
  sig.inputs = {{"tokens", ElementType::kInt64, {kAnyDim}},
                {"positions", ElementType::kInt64, {kAnyDim}},
                {"cross_len", ElementType::kInt64, {kAnyDim}}};
  const int64_t H = d.n_text_head;
  const int64_t hd = d.head_dim();
  for (const char* kind : {"self", "cross"}) {
    for (int l = 0; l < d.n_text_layer; ++l) {
      for (const char* kv : {"k", "v"}) {
        sig.inputs.push_back({fmt::format("{}_{}_{}", kind, kv, l), ElementType::kFloat32, {kAnyDim, H, kAnyDim, hd}});
      }
    }
  }
  sig.outputs = {{"logits", ElementType::kFloat32, {kAnyDim, d.n_vocab}},
                 {"new_kv", ElementType::kFloat32, {kAnyDim, d.n_text_layer, 2, d.n_text_state}}};
  return sig;
}

class BrisvoxDecoder final : public WhisperDecoder::Backend {
 public:
  BrisvoxDecoder(runtime::ModelSession model_session, const WhisperConfig& c, int lanes, int tokens, int audio)
      : Backend(WhisperLayout::kBrisvox, std::move(model_session), c, lanes, tokens, audio) {
    const WhisperDims& d = config.dims;
    const auto binding = runtime::check_signature(session.info(), brisvox_signature(d));
    for (const auto& n : binding.input_names) in_names_.add(n);
    for (const auto& n : binding.output_names) out_names_.add(n);
    // Optional: converters before word timestamps wrote no `alignment` output.
    for (const TensorInfo& o : session.info().outputs) {
      if (o.name != "alignment") continue;
      if (o.dims.size() != 3 || o.dims[1] < 1) {
        throw Error(ErrorCode::kBadModel,
                    fmt::format("Whisper decoder '{}': output 'alignment' has shape {}, expected [batch, heads, audio]",
                                session.info().source, runtime::dims_string(o.dims)));
      }
      alignment_heads = static_cast<int>(o.dims[1]);
      out_names_.add(o.name);
    }
    in_names_.finish();
    out_names_.finish();
    L_ = static_cast<std::size_t>(d.n_text_layer);
    H_ = static_cast<std::size_t>(d.n_text_head);
    hd_ = static_cast<std::size_t>(d.head_dim());
    D_ = static_cast<std::size_t>(d.n_text_state);
    S_ = static_cast<std::size_t>(max_lanes);
    C_ = static_cast<std::size_t>(max_tokens);
    T_ = static_cast<std::size_t>(max_audio);
    // Zero-filled: a padding lane reads finite numbers, whatever ran there before. Sized for every
    // lane at a full window, resident only where runs write (ZeroedBuffer).
    self_ = ZeroedBuffer<float>(L_ * 2 * S_ * H_ * C_ * hd_);
    cross_ = ZeroedBuffer<float>(L_ * 2 * S_ * H_ * T_ * hd_);
    new_kv_.assign(S_ * L_ * 2 * D_, 0.0f);
    const auto A = static_cast<std::size_t>(alignment_heads);
    alignment.assign(S_ * A * T_, 0.0f);
    tok_.assign(S_, 0);
    pos_.assign(S_, 0);
    len_.assign(S_, 1);
    const auto V = static_cast<std::size_t>(d.n_vocab);
    const auto H = static_cast<int64_t>(H_);
    const auto hd = static_cast<int64_t>(hd_);
    for (std::size_t b = 1; b <= S_; ++b) {
      const auto nb = static_cast<int64_t>(b);
      std::vector<Ort::Value> in;
      in.push_back(view(tok_.data(), b, std::array<int64_t, 1>{nb}));
      in.push_back(view(pos_.data(), b, std::array<int64_t, 1>{nb}));
      in.push_back(view(len_.data(), b, std::array<int64_t, 1>{nb}));
      for (int kind = 0; kind < 2; ++kind) {
        float* base = kind == 0 ? self_.data() : cross_.data();
        const std::size_t rows = kind == 0 ? C_ : T_;
        for (std::size_t l = 0; l < L_; ++l) {
          for (std::size_t kv = 0; kv < 2; ++kv) {
            float* block = base + (l * 2 + kv) * S_ * H_ * rows * hd_;
            in.push_back(view(block, b * H_ * rows * hd_,
                              std::array<int64_t, 4>{nb, H, static_cast<int64_t>(rows), hd}));
          }
        }
      }
      std::vector<Ort::Value> out;
      out.push_back(view(logits.data(), b * V, std::array<int64_t, 2>{nb, d.n_vocab}));
      out.push_back(view(new_kv_.data(), b * L_ * 2 * D_,
                         std::array<int64_t, 4>{nb, d.n_text_layer, 2, d.n_text_state}));
      if (A > 0) {
        out.push_back(view(alignment.data(), b * A * T_,
                           std::array<int64_t, 3>{nb, static_cast<int64_t>(A), static_cast<int64_t>(T_)}));
      }
      inputs_.push_back(std::move(in));
      outputs_.push_back(std::move(out));
    }
  }

  WhisperEncoderOutput encoder_target(int lane, int) override {
    const auto s = static_cast<std::size_t>(lane);
    return {cross_.data() + s * H_ * T_ * hd_, S_ * H_ * T_ * hd_, max_audio};
  }

  void run(int end, std::span<const int> tokens) override {
    const auto e = static_cast<std::size_t>(end);
    for (std::size_t s = 0; s < e; ++s) {
      if (busy[s]) {
        tok_[s] = tokens[s];
        pos_[s] = positions[s];
        len_[s] = audio_positions[s];
      } else {  // padding: any valid token at position 0 against one audio row
        tok_[s] = config.tokens.eot;
        pos_[s] = 0;
        len_[s] = 1;
      }
    }
    auto& in = inputs_[e - 1];
    auto& out = outputs_[e - 1];
    try {
      session.session().Run(session.run_options(), in_names_.ptrs.data(), in.data(), in.size(), out_names_.ptrs.data(),
                            out.data(), out.size());
    } catch (const Ort::Exception& ex) {
      run_failed(ex, end);
    }
    // new_kv [b][layer][k|v][head * head_dim] -> row `position` of each (layer, k|v, head) cache.
    for (std::size_t s = 0; s < e; ++s) {
      if (!busy[s]) continue;
      const auto p = static_cast<std::size_t>(positions[s]);
      for (std::size_t l = 0; l < L_; ++l) {
        for (std::size_t kv = 0; kv < 2; ++kv) {
          const float* src = new_kv_.data() + ((s * L_ + l) * 2 + kv) * D_;
          float* dst = self_.data() + (((l * 2 + kv) * S_ + s) * H_) * C_ * hd_ + p * hd_;
          for (std::size_t h = 0; h < H_; ++h) std::memcpy(dst + h * C_ * hd_, src + h * hd_, hd_ * sizeof(float));
        }
      }
    }
  }

  void copy_lane(int from, int to, bool audio) override {
    const auto f = static_cast<std::size_t>(from);
    const auto t = static_cast<std::size_t>(to);
    const auto rows = static_cast<std::size_t>(positions[f]);
    for (std::size_t lkv = 0; lkv < L_ * 2; ++lkv) {
      for (std::size_t h = 0; h < H_; ++h) {
        const float* src = self_.data() + ((lkv * S_ + f) * H_ + h) * C_ * hd_;
        float* dst = self_.data() + ((lkv * S_ + t) * H_ + h) * C_ * hd_;
        std::memcpy(dst, src, rows * hd_ * sizeof(float));
      }
    }
    if (!audio) return;
    const auto audio_rows = static_cast<std::size_t>(audio_positions[f]);
    for (std::size_t lkv = 0; lkv < L_ * 2; ++lkv) {
      for (std::size_t h = 0; h < H_; ++h) {
        const float* src = cross_.data() + ((lkv * S_ + f) * H_ + h) * T_ * hd_;
        float* dst = cross_.data() + ((lkv * S_ + t) * H_ + h) * T_ * hd_;
        std::memcpy(dst, src, audio_rows * hd_ * sizeof(float));
      }
    }
  }

  std::size_t bytes_per_lane() const override {
    return sizeof(float) * (2 * L_ * D_ * (C_ + T_) + static_cast<std::size_t>(config.dims.n_vocab) + 2 * L_ * D_ +
                            static_cast<std::size_t>(alignment_heads) * T_) +
           3 * sizeof(int64_t);
  }

 private:
  std::size_t L_ = 0, H_ = 0, hd_ = 0, D_ = 0, S_ = 0, C_ = 0, T_ = 0;
  ZeroedBuffer<float> self_;
  ZeroedBuffer<float> cross_;
  std::vector<float> new_kv_;
  std::vector<int64_t> tok_;
  std::vector<int64_t> pos_;
  std::vector<int64_t> len_;
  Names in_names_;
  Names out_names_;
  std::vector<std::vector<Ort::Value>> inputs_;   // [b - 1]
  std::vector<std::vector<Ort::Value>> outputs_;  // [b - 1]
};

}  // namespace

std::unique_ptr<WhisperDecoder::Backend> make_brisvox_decoder(runtime::ModelSession session, const WhisperConfig& config,
                                                              int lanes, int tokens, int audio) {
  return std::make_unique<BrisvoxDecoder>(std::move(session), config, lanes, tokens, audio);
}

}  // namespace brisvox::whisper_detail
