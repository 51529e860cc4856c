#include "brisvox/models/stt/whisper_encoder.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <vector>

#include "base/zeroed_buffer.h"
#include "brisvox/error.h"
#include "runtime/model_session.h"
#include "runtime/model_signature.h"
#include "runtime/onnx_header.h"

namespace brisvox {
namespace {

using runtime::kAnyDim;

runtime::ModelSignature encoder_signature(WhisperLayout layout, const WhisperDims& d) {
  runtime::ModelSignature sig;
  const int64_t L = d.n_text_layer;
  const int64_t H = d.n_text_head;
  const int64_t hd = d.head_dim();
  const int64_t D = d.n_text_state;
  switch (layout) {
    case WhisperLayout::kBrisvox:
      sig.model_kind = "Whisper encoder (brisvox layout)";
      sig.inputs = {{"mel", ElementType::kFloat32, {kAnyDim, d.n_mels, kAnyDim}}};
      sig.outputs = {{"cross_kv", ElementType::kFloat32, {kAnyDim, L, 2, H, kAnyDim, hd}}};
      break;
    case WhisperLayout::kSherpaOnnx:
      sig.model_kind = "Whisper encoder (sherpa-onnx layout)";
      sig.inputs = {{"mel", ElementType::kFloat32, {kAnyDim, d.n_mels, kAnyDim}}};
      sig.outputs = {{"n_layer_cross_k", ElementType::kFloat32, {L, kAnyDim, kAnyDim, D}},
                     {"n_layer_cross_v", ElementType::kFloat32, {L, kAnyDim, kAnyDim, D}}};
      break;
    case WhisperLayout::kOptimum:
      sig.model_kind = "Whisper encoder (Optimum layout)";
      sig.inputs = {{"input_features", ElementType::kFloat32, {kAnyDim, d.n_mels, d.full_frames()}}};
      sig.outputs = {{"last_hidden_state", ElementType::kFloat32, {kAnyDim, d.n_audio_ctx, d.n_audio_state}}};
      break;
  }
  return sig;
}

bool quantizes_per_tensor(const std::string& path) {
  const auto ops = runtime::read_onnx_op_types(path);
  if (!ops) return true;  // unknown: the safe choice
  return ops->count("DynamicQuantizeLinear") > 0 || ops->count("DynamicQuantizeMatMul") > 0;
}

}  // namespace

struct WhisperEncoder::Impl {
  runtime::ModelSession session;
  WhisperLayout layout;
  WhisperDims dims;
  int max_batch;
  int granularity;
  // Each window runs alone:
  // - where the encoder quantizes its activations with one scale per tensor (DynamicQuantizeLinear,
  //   DynamicQuantizeMatMul: tiny.en-int8, Optimum's quantized exports), as a row's output would
  //   depend on the other rows of its batch: a segment transcribes the same whatever else the
  //   engine is doing;
  // - on the CPU alone: a batch of float windows costs more per window than each alone (tiny.en
  //   full windows 560 against 484 ms, base 1247 against 1165 ms), and ONNX Runtime's arena then
  //   holds one window's intermediates, not a batch's (docs/PERFORMANCE.md, stop 46).
  // A session with another execution provider (a GPU's) batches float windows.
  bool rows_alone;
  std::vector<int> frame_options;  // allowed window lengths, ascending
  ZeroedBuffer<float> input;       // [max_batch, n_mels, full_frames]; rows alone write the first
  // Layout-dependent, for max_batch full windows; resident only where runs write (a fit window of a
  // batch of two writes a fraction of it).
  ZeroedBuffer<float> output;
  ZeroedBuffer<float> output_v;    // sherpa: the values (keys are in `output`)
  // views[f][b - 1]: the inputs/outputs for frame option f and batch b
  std::vector<std::vector<Ort::Value>> in_views;
  std::vector<std::vector<std::vector<Ort::Value>>> out_views;
  std::vector<std::string> in_names;
  std::vector<std::string> out_names;
  std::vector<const char*> in_name_ptrs;
  std::vector<const char*> out_name_ptrs;

  Impl(runtime::ModelSession s, const WhisperModel& model, const WhisperEncoderConfig& config)
      : session(std::move(s)),
        layout(model.layout()),
        dims(model.config().dims),
        max_batch(config.max_batch),
        granularity(config.fit_granularity_frames),
        rows_alone(quantizes_per_tensor(model.encoder_path()) || session.providers().size() <= 1) {
    const auto binding = runtime::check_signature(session.info(), encoder_signature(layout, dims));
    in_names = binding.input_names;
    out_names = binding.output_names;
    for (const auto& n : in_names) in_name_ptrs.push_back(n.c_str());
    for (const auto& n : out_names) out_name_ptrs.push_back(n.c_str());

    const int full = dims.full_frames();
    if (model.supports_fit_window()) {
      for (int f = granularity; f < full; f += granularity) frame_options.push_back(f);
    }
    frame_options.push_back(full);

    const auto B = static_cast<std::size_t>(max_batch);
    const auto mels = static_cast<std::size_t>(dims.n_mels);
    const auto T = static_cast<std::size_t>(dims.n_audio_ctx);
    const auto D = static_cast<std::size_t>(dims.n_text_state);
    const auto L = static_cast<std::size_t>(dims.n_text_layer);
    input = ZeroedBuffer<float>(B * mels * static_cast<std::size_t>(full));
    if (layout == WhisperLayout::kOptimum) {
      output = ZeroedBuffer<float>(B * T * D);
    } else {
      output = ZeroedBuffer<float>(B * L * (layout == WhisperLayout::kBrisvox ? 2 : 1) * T * D);
      if (layout == WhisperLayout::kSherpaOnnx) output_v = ZeroedBuffer<float>(B * L * T * D);
    }
    const auto mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    const int64_t H = dims.n_text_head;
    const int64_t hd = dims.head_dim();
    for (int frames : frame_options) {
      const int64_t pos = frames / 2;
      in_views.emplace_back();
      out_views.emplace_back();
      for (int b = 1; b <= max_batch; ++b) {
        const auto nb = static_cast<std::size_t>(b);
        const std::array<int64_t, 3> in_shape{b, dims.n_mels, frames};
        in_views.back().push_back(Ort::Value::CreateTensor<float>(
            mem, input.data(), nb * mels * static_cast<std::size_t>(frames), in_shape.data(), in_shape.size()));
        std::vector<Ort::Value> outs;
        const auto rows = static_cast<std::size_t>(pos) * D;
        if (layout == WhisperLayout::kBrisvox) {
          const std::array<int64_t, 6> shape{b, dims.n_text_layer, 2, H, pos, hd};
          outs.push_back(Ort::Value::CreateTensor<float>(mem, output.data(), nb * L * 2 * rows, shape.data(), shape.size()));
        } else if (layout == WhisperLayout::kSherpaOnnx) {
          const std::array<int64_t, 4> shape{dims.n_text_layer, b, pos, dims.n_text_state};
          outs.push_back(Ort::Value::CreateTensor<float>(mem, output.data(), L * nb * rows, shape.data(), shape.size()));
          outs.push_back(Ort::Value::CreateTensor<float>(mem, output_v.data(), L * nb * rows, shape.data(), shape.size()));
        } else {
          const std::array<int64_t, 3> shape{b, pos, dims.n_audio_state};
          outs.push_back(Ort::Value::CreateTensor<float>(mem, output.data(), nb * rows, shape.data(), shape.size()));
        }
        out_views.back().push_back(std::move(outs));
      }
    }
  }

  std::size_t output_floats(int positions) const {
    const auto rows = static_cast<std::size_t>(positions) * static_cast<std::size_t>(dims.n_text_state);
    return layout == WhisperLayout::kOptimum ? rows : 2 * static_cast<std::size_t>(dims.n_text_layer) * rows;
  }

  // Copies segment i's rows out of the batch output into its target.
  void scatter(std::size_t i, std::size_t b, std::size_t pos, const WhisperEncoderOutput& out) const {
    const auto D = static_cast<std::size_t>(dims.n_text_state);
    const auto L = static_cast<std::size_t>(dims.n_text_layer);
    const auto cap = static_cast<std::size_t>(out.capacity);
    if (layout == WhisperLayout::kBrisvox) {
      // batch output [b, L, 2, H, pos, hd] -> block (l, kv) = [H][cap][hd]
      const auto H = static_cast<std::size_t>(dims.n_text_head);
      const auto hd = static_cast<std::size_t>(dims.head_dim());
      for (std::size_t k = 0; k < 2 * L; ++k) {
        for (std::size_t h = 0; h < H; ++h) {
          const float* src = output.data() + ((i * 2 * L + k) * H + h) * pos * hd;
          float* dst = out.data + k * out.block_stride + h * cap * hd;
          std::memcpy(dst, src, pos * hd * sizeof(float));
        }
      }
    } else if (layout == WhisperLayout::kSherpaOnnx) {
      // [L, b, pos, D] keys and values -> block kv * L + l = [pos][D]
      for (std::size_t kv = 0; kv < 2; ++kv) {
        const float* base = kv == 0 ? output.data() : output_v.data();
        for (std::size_t l = 0; l < L; ++l) {
          std::memcpy(out.data + (kv * L + l) * out.block_stride, base + (l * b + i) * pos * D, pos * D * sizeof(float));
        }
      }
    } else {
      std::memcpy(out.data, output.data() + i * pos * D, pos * D * sizeof(float));
    }
  }
};

WhisperEncoder::WhisperEncoder(const WhisperModel& model, const WhisperEncoderConfig& config) {
  if (config.max_batch < 1 || config.max_batch > 64) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper encoder max_batch must be 1 to 64, got {}", config.max_batch));
  }
  if (config.fit_granularity_frames < 2 || config.fit_granularity_frames % 2 != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper encoder fit_granularity_frames must be even and >= 2, got {}", config.fit_granularity_frames));
  }
  auto session = runtime::ModelSession::load_file(model.encoder_path(), config.session);
  impl_ = std::make_unique<Impl>(std::move(session), model, config);
}

WhisperEncoder::~WhisperEncoder() = default;
WhisperEncoder::WhisperEncoder(WhisperEncoder&&) noexcept = default;
WhisperEncoder& WhisperEncoder::operator=(WhisperEncoder&&) noexcept = default;

int WhisperEncoder::max_batch() const { return impl_->max_batch; }
int WhisperEncoder::full_frames() const { return impl_->dims.full_frames(); }
bool WhisperEncoder::supports_fit() const { return impl_->frame_options.size() > 1; }
const ModelInfo& WhisperEncoder::model_info() const { return impl_->session.info(); }

std::size_t WhisperEncoder::output_floats(int positions) const { return impl_->output_floats(positions); }

WhisperEncoderOutput WhisperEncoder::output_in(std::span<float> storage, int positions) const {
  if (positions < 1 || storage.size() < output_floats(positions)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper encoder output of {} positions needs {} floats, the buffer holds {}", positions,
                            positions < 1 ? 0 : output_floats(positions), storage.size()));
  }
  return {storage.data(), static_cast<std::size_t>(positions) * static_cast<std::size_t>(impl_->dims.n_text_state),
          positions};
}

void WhisperEncoder::run(int frames, std::span<const float* const> mels, std::span<const WhisperEncoderOutput> outputs) {
  Impl& m = *impl_;
  const std::size_t n = mels.size();
  if (n == 0) return;
  if (n > static_cast<std::size_t>(m.max_batch) || outputs.size() != n) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("WhisperEncoder::run: {} windows and {} outputs for max batch {}", n, outputs.size(), m.max_batch));
  }
  std::size_t option = m.frame_options.size();
  for (std::size_t f = 0; f < m.frame_options.size(); ++f) {
    if (m.frame_options[f] == frames) option = f;
  }
  if (option == m.frame_options.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                supports_fit()
                    ? fmt::format("WhisperEncoder::run: a window of {} frames; this encoder takes {} or a multiple of {} "
                                  "below it",
                                  frames, m.dims.full_frames(), m.granularity)
                    : fmt::format("WhisperEncoder::run: a window of {} frames; this model's encoder takes exactly {} "
                                  "(a full 30 s window)",
                                  frames, m.dims.full_frames()));
  }
  const auto pos = static_cast<std::size_t>(frames / 2);
  for (std::size_t i = 0; i < n; ++i) {
    if (outputs[i].data == nullptr || outputs[i].capacity < static_cast<int>(pos) || mels[i] == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("WhisperEncoder::run: output {} has room for {} positions, the window needs {}", i,
                              outputs[i].capacity, pos));
    }
  }
  const std::size_t window = static_cast<std::size_t>(m.dims.n_mels) * static_cast<std::size_t>(frames);
  // One run of `rows` windows starting at window `first`.
  const auto run_rows = [&](std::size_t first, std::size_t rows) {
    for (std::size_t i = 0; i < rows; ++i) {
      std::memcpy(m.input.data() + i * window, mels[first + i], window * sizeof(float));
    }
    auto& outs = m.out_views[option][rows - 1];
    try {
      m.session.session().Run(m.session.run_options(), m.in_name_ptrs.data(), &m.in_views[option][rows - 1], 1,
                              m.out_name_ptrs.data(), outs.data(), outs.size());
    } catch (const Ort::Exception& e) {
      throw Error(ErrorCode::kRuntime, fmt::format("Whisper encoder run of {} window(s) of {} frames on '{}' failed: {}",
                                                   rows, frames, m.session.info().source, e.what()));
    }
    for (std::size_t i = 0; i < rows; ++i) m.scatter(i, rows, pos, outputs[first + i]);
  };
  if (m.rows_alone) {
    for (std::size_t i = 0; i < n; ++i) run_rows(i, 1);
  } else {
    run_rows(0, n);
  }
}

bool WhisperEncoder::runs_rows_alone() const { return impl_->rows_alone; }

void WhisperEncoder::cancel_run() noexcept { impl_->session.cancel_run(); }
void WhisperEncoder::clear_cancel() noexcept { impl_->session.clear_cancel(); }

}  // namespace brisvox
