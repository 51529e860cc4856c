#include "brisvox/models/tts/piper_vits.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "brisvox/error.h"
#include "models/tts/piper/winograd_op.h"
#include "runtime/model_session.h"
#include "runtime/model_signature.h"

namespace brisvox {
namespace {

using runtime::kAnyDim;

bool has_input(const ModelInfo& info, const std::string& name) {
  return std::any_of(info.inputs.begin(), info.inputs.end(), [&](const TensorInfo& t) { return t.name == name; });
}
bool has_output(const ModelInfo& info, const std::string& name) {
  return std::any_of(info.outputs.begin(), info.outputs.end(), [&](const TensorInfo& t) { return t.name == name; });
}

runtime::ModelSignature piper_signature(bool with_sid, bool with_durations) {
  runtime::ModelSignature sig;
  sig.model_kind = "Piper (VITS) voice";
  sig.inputs = {{"input", ElementType::kInt64, {kAnyDim, kAnyDim}},
                {"input_lengths", ElementType::kInt64, {kAnyDim}},
                {"scales", ElementType::kFloat32, {3}}};
  if (with_sid) sig.inputs.push_back({"sid", ElementType::kInt64, {kAnyDim}});
  sig.outputs = {{"output", ElementType::kFloat32, {kAnyDim, 1, 1, kAnyDim}}};
  if (with_durations) sig.outputs.push_back({"durations", ElementType::kFloat32, {kAnyDim, 1, kAnyDim}});
  return sig;
}

}  // namespace

struct PiperVits::Impl {
  runtime::ModelSession session;
  PiperVitsConfig config;
  bool sid = false;
  bool durations = false;
  std::vector<std::int64_t> ids;      // [max_batch, max_phoneme_ids]
  std::vector<std::int64_t> lengths;  // [max_batch]
  std::vector<std::int64_t> speakers; // [max_batch]
  std::array<float, 3> scales{};
  std::vector<const char*> input_names;
  std::vector<const char*> output_names;
  Ort::MemoryInfo mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);

  Impl(runtime::ModelSession s, const PiperVitsConfig& c) : session(std::move(s)), config(c) {
    const ModelInfo& info = session.info();
    sid = has_input(info, "sid");
    durations = has_output(info, "durations");
    if (config.num_speakers > 1 && !sid) {
      throw Error(ErrorCode::kModelMismatch,
                  fmt::format("model '{}' has no input 'sid' but its voice config has {} speakers; a multi-speaker Piper "
                              "voice needs input 'sid' int64 [?]",
                              info.source, config.num_speakers));
    }
    runtime::check_signature(info, piper_signature(sid, durations));
    if (config.max_batch > 1 && !durations) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("model '{}' has no output 'durations', so its sentences cannot be batched (max_batch {}); "
                              "use max_batch 1 or add it with tools/piper/add_duration_output.py",
                              info.source, config.max_batch));
    }
    const auto b = static_cast<std::size_t>(config.max_batch);
    ids.assign(b * static_cast<std::size_t>(config.max_phoneme_ids), 0);
    lengths.assign(b, 0);
    speakers.assign(b, 0);
    input_names = {"input", "input_lengths", "scales"};
    if (sid) input_names.push_back("sid");
    output_names = {"output"};
    if (durations) output_names.push_back("durations");
  }
};

PiperVits::PiperVits(const PiperVitsConfig& config) {
  if (config.max_batch < 1 || config.max_batch > 64) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Piper max_batch must be 1 to 64, got {}", config.max_batch));
  }
  if (config.max_phoneme_ids < 3 || config.max_phoneme_ids > 65536) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Piper max_phoneme_ids must be 3 to 65536, got {}", config.max_phoneme_ids));
  }
  if (config.hop_length < 1 || config.num_speakers < 1) {
    throw Error(ErrorCode::kInvalidArgument, "Piper hop_length and num_speakers must be >= 1");
  }
  piper::register_winograd_op();  // the conv2d rewrite of a voice runs it (winograd_op.h)
  auto session = runtime::ModelSession::load_file(config.model_path, config.session);
  impl_ = std::make_unique<Impl>(std::move(session), config);
}

PiperVits::~PiperVits() = default;
PiperVits::PiperVits(PiperVits&&) noexcept = default;
PiperVits& PiperVits::operator=(PiperVits&&) noexcept = default;

const ModelInfo& PiperVits::model_info() const { return impl_->session.info(); }
int PiperVits::max_batch() const { return impl_->config.max_batch; }
int PiperVits::max_phoneme_ids() const { return impl_->config.max_phoneme_ids; }
bool PiperVits::has_durations() const { return impl_->durations; }
bool PiperVits::has_speaker_input() const { return impl_->sid; }

void PiperVits::run(std::span<const std::vector<std::int64_t>> ids, const PiperScales& scales, std::int64_t speaker_id,
                    std::span<std::vector<float>> audio) {
  Impl& m = *impl_;
  const std::size_t n = ids.size();
  if (n == 0 || n > static_cast<std::size_t>(m.config.max_batch) || audio.size() < n) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("PiperVits::run: {} sentences, {} outputs for max batch {}", n,
                                                         audio.size(), m.config.max_batch));
  }
  if (m.sid && (speaker_id < 0 || speaker_id >= m.config.num_speakers)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("speaker id {} is outside [0, {})", speaker_id, m.config.num_speakers));
  }
  if (!std::isfinite(scales.noise_scale) || !std::isfinite(scales.length_scale) || !std::isfinite(scales.noise_w_scale) ||
      scales.length_scale <= 0.0f || scales.noise_scale < 0.0f || scales.noise_w_scale < 0.0f) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Piper scales must be finite, length_scale > 0 and the noise scales >= 0 (got {}, {}, {})",
                            scales.noise_scale, scales.length_scale, scales.noise_w_scale));
  }
  std::size_t longest = 0;
  for (const auto& row : ids) longest = std::max(longest, row.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (ids[i].empty() || ids[i].size() > static_cast<std::size_t>(m.config.max_phoneme_ids)) {
      throw Error(ErrorCode::kInvalidArgument, fmt::format("sentence {} has {} phoneme ids; 1 to {} fit one run", i,
                                                           ids[i].size(), m.config.max_phoneme_ids));
    }
  }
  // Rows are `longest` wide inside the preallocated buffer; padding is id 0 (Piper's pad).
  for (std::size_t i = 0; i < n; ++i) {
    std::int64_t* row = m.ids.data() + i * longest;
    std::copy(ids[i].begin(), ids[i].end(), row);
    std::fill(row + ids[i].size(), row + longest, 0);
    m.lengths[i] = static_cast<std::int64_t>(ids[i].size());
    m.speakers[i] = speaker_id;
  }
  m.scales = {scales.noise_scale, scales.length_scale, scales.noise_w_scale};
  const std::array<std::int64_t, 2> ids_shape{static_cast<std::int64_t>(n), static_cast<std::int64_t>(longest)};
  const std::array<std::int64_t, 1> batch_shape{static_cast<std::int64_t>(n)};
  const std::array<std::int64_t, 1> scales_shape{3};
  std::vector<Ort::Value> inputs;
  inputs.reserve(4);
  inputs.push_back(Ort::Value::CreateTensor<std::int64_t>(m.mem, m.ids.data(), n * longest, ids_shape.data(), 2));
  inputs.push_back(Ort::Value::CreateTensor<std::int64_t>(m.mem, m.lengths.data(), n, batch_shape.data(), 1));
  inputs.push_back(Ort::Value::CreateTensor<float>(m.mem, m.scales.data(), 3, scales_shape.data(), 1));
  if (m.sid) inputs.push_back(Ort::Value::CreateTensor<std::int64_t>(m.mem, m.speakers.data(), n, batch_shape.data(), 1));

  std::vector<Ort::Value> outputs;
  try {
    outputs = m.session.session().Run(m.session.run_options(), m.input_names.data(), inputs.data(), inputs.size(),
                                      m.output_names.data(), m.output_names.size());
  } catch (const Ort::Exception& e) {
    throw Error(ErrorCode::kRuntime,
                fmt::format("Piper run of {} sentence(s) on '{}' failed: {}", n, m.session.info().source, e.what()));
  }
  const auto shape = outputs[0].GetTensorTypeAndShapeInfo().GetShape();
  if (shape.size() != 4 || shape[0] != static_cast<std::int64_t>(n) || shape[3] < 0) {
    throw Error(ErrorCode::kRuntime, fmt::format("Piper model '{}' returned audio of an unexpected shape",
                                                 m.session.info().source));
  }
  const auto samples = static_cast<std::size_t>(shape[3]);
  const float* data = outputs[0].GetTensorData<float>();
  for (std::size_t i = 0; i < n; ++i) {
    std::size_t len = samples;
    if (m.durations && n > 1) {
      const auto dshape = outputs[1].GetTensorTypeAndShapeInfo().GetShape();
      const auto t = static_cast<std::size_t>(dshape.back());
      const float* d = outputs[1].GetTensorData<float>() + i * t;
      double frames = 0;
      for (std::size_t k = 0; k < t; ++k) frames += d[k];
      len = std::min(samples, static_cast<std::size_t>(std::max(frames, 1.0)) * static_cast<std::size_t>(m.config.hop_length));
    }
    audio[i].assign(data + i * samples, data + i * samples + len);
  }
}

void PiperVits::cancel_run() noexcept { impl_->session.cancel_run(); }
void PiperVits::clear_cancel() noexcept { impl_->session.clear_cancel(); }

}  // namespace brisvox
