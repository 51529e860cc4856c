#include "brisvox/models/turn/smart_turn.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <vector>

#include "brisvox/error.h"
#include "runtime/model_session.h"
#include "runtime/model_signature.h"

namespace brisvox {
namespace {

runtime::ModelSignature smart_turn_signature() {
  runtime::ModelSignature sig;
  sig.model_kind = "Smart Turn v3";
  sig.inputs = {{"input_features", ElementType::kFloat32, {runtime::kAnyDim, kTurnMels, kTurnFrames}}};
  sig.outputs = {{"logits", ElementType::kFloat32, {runtime::kAnyDim, 1}}};
  sig.bind_by_position_if_renamed = true;
  return sig;
}

}  // namespace

struct SmartTurn::Impl {
  runtime::ModelSession session;
  int max_batch;
  std::vector<float> input;   // [max_batch, 80, 800]
  std::vector<float> output;  // [max_batch, 1]
  std::vector<Ort::Value> inputs_by_batch;
  std::vector<Ort::Value> outputs_by_batch;
  std::string input_name;
  std::string output_name;
  const char* input_name_ptr = nullptr;
  const char* output_name_ptr = nullptr;

  Impl(runtime::ModelSession s, int batch) : session(std::move(s)), max_batch(batch) {
    const auto binding = runtime::check_signature(session.info(), smart_turn_signature());
    input_name = binding.input_names[0];
    output_name = binding.output_names[0];
    input_name_ptr = input_name.c_str();
    output_name_ptr = output_name.c_str();
    const auto b = static_cast<std::size_t>(max_batch);
    input.assign(b * kTurnFeatureValues, 0.0f);
    output.assign(b, 0.0f);
    const auto mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    for (int n = 1; n <= max_batch; ++n) {
      const auto nn = static_cast<std::size_t>(n);
      const std::array<int64_t, 3> in_shape{n, kTurnMels, kTurnFrames};
      const std::array<int64_t, 2> out_shape{n, 1};
      inputs_by_batch.push_back(
          Ort::Value::CreateTensor<float>(mem, input.data(), nn * kTurnFeatureValues, in_shape.data(), 3));
      outputs_by_batch.push_back(Ort::Value::CreateTensor<float>(mem, output.data(), nn, out_shape.data(), 2));
    }
  }
};

SmartTurn::SmartTurn(const SmartTurnConfig& config) {
  if (config.max_batch < 1 || config.max_batch > 256) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Smart Turn max_batch must be 1 to 256, got {}", config.max_batch));
  }
  auto session = runtime::ModelSession::load_file(config.model_path, config.session);
  impl_ = std::make_unique<Impl>(std::move(session), config.max_batch);
}

SmartTurn::~SmartTurn() = default;
SmartTurn::SmartTurn(SmartTurn&&) noexcept = default;
SmartTurn& SmartTurn::operator=(SmartTurn&&) noexcept = default;

int SmartTurn::max_batch() const { return impl_->max_batch; }
const ModelInfo& SmartTurn::model_info() const { return impl_->session.info(); }

void SmartTurn::run(std::span<const float* const> features, std::span<float> probs) {
  Impl& m = *impl_;
  const std::size_t n = features.size();
  if (n == 0) return;
  if (n > static_cast<std::size_t>(m.max_batch) || probs.size() < n) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("SmartTurn::run: {} inputs, {} outputs for max batch {}", n, probs.size(), m.max_batch));
  }
  for (std::size_t i = 0; i < n; ++i) {
    std::memcpy(m.input.data() + i * kTurnFeatureValues, features[i], kTurnFeatureValues * sizeof(float));
  }
  try {
    m.session.session().Run(m.session.run_options(), &m.input_name_ptr, &m.inputs_by_batch[n - 1], 1, &m.output_name_ptr,
                            &m.outputs_by_batch[n - 1], 1);
  } catch (const Ort::Exception& e) {
    throw Error(ErrorCode::kRuntime,
                fmt::format("Smart Turn run of {} turn(s) on '{}' failed: {}", n, m.session.info().source, e.what()));
  }
  for (std::size_t i = 0; i < n; ++i) probs[i] = m.output[i];
}

void SmartTurn::cancel_run() noexcept { impl_->session.cancel_run(); }

void SmartTurn::clear_cancel() noexcept { impl_->session.clear_cancel(); }

}  // namespace brisvox
