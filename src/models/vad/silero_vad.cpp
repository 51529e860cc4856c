#include "brisvox/models/vad/silero_vad.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "brisvox/error.h"
#include "runtime/model_session.h"
#include "runtime/model_signature.h"

namespace brisvox {
namespace {

using runtime::kAnyDim;

runtime::ModelSignature silero_signature() {
  runtime::ModelSignature sig;
  sig.model_kind = "Silero VAD v5/v6";
  sig.inputs = {{"input", ElementType::kFloat32, {kAnyDim, kAnyDim}},
                {"state", ElementType::kFloat32, {2, kAnyDim, kSileroStateWidth}},
                {"sr", ElementType::kInt64, {}}};
  // v5/v6 files declare stateN as [?,?,?]: dynamic dims are accepted for the fixed ones.
  sig.outputs = {{"output", ElementType::kFloat32, {kAnyDim, 1}},
                 {"stateN", ElementType::kFloat32, {2, kAnyDim, kSileroStateWidth}}};
  return sig;
}

int rate_index(int sample_rate_hz) {
  if (sample_rate_hz == 16000) return 0;
  if (sample_rate_hz == 8000) return 1;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("Silero VAD runs at 16000 or 8000 Hz, not {} (resample the audio)", sample_rate_hz));
}

constexpr std::array<int, 2> kRates{16000, 8000};
constexpr std::array<int, 2> kChunk{512, 256};
constexpr std::array<int, 2> kContext{64, 32};
constexpr int kMaxRow = 512 + 64;

}  // namespace


struct SileroVad::Impl {
  // Ort::Values over the buffers below for every (rate, batch size): creating them per run would
  // allocate; they are views, so the same memory serves every batch size.
  struct Bound {
    std::array<Ort::Value, 3> inputs;
    std::array<Ort::Value, 2> outputs;
  };

  runtime::ModelSession session;
  int max_batch;

  // Buffers sized for max_batch; a run of B streams uses their first B rows.
  std::vector<float> input;      // [B, context + chunk]
  std::vector<float> state_in;   // [2, B, 128]
  std::vector<float> state_out;  // [2, B, 128]
  std::vector<float> output;     // [B, 1]
  std::array<int64_t, 2> sr_values{16000, 8000};

  std::array<std::vector<Bound>, 2> bound;  // [rate index][batch size - 1]
  std::array<std::string, 3> input_names;
  std::array<std::string, 2> output_names;
  std::array<const char*, 3> input_name_ptrs{};
  std::array<const char*, 2> output_name_ptrs{};

  Impl(runtime::ModelSession s, int batch) : session(std::move(s)), max_batch(batch) {
    const auto b = static_cast<std::size_t>(max_batch);
    input.assign(b * kMaxRow, 0.0f);
    state_in.assign(b * kSileroStateSize, 0.0f);
    state_out.assign(b * kSileroStateSize, 0.0f);
    output.assign(b, 0.0f);

    const runtime::SignatureBinding binding = runtime::check_signature(session.info(), silero_signature());
    for (std::size_t i = 0; i < 3; ++i) input_names[i] = binding.input_names[i];
    for (std::size_t i = 0; i < 2; ++i) output_names[i] = binding.output_names[i];
    for (std::size_t i = 0; i < 3; ++i) input_name_ptrs[i] = input_names[i].c_str();
    for (std::size_t i = 0; i < 2; ++i) output_name_ptrs[i] = output_names[i].c_str();

    const auto mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
    for (std::size_t r = 0; r < 2; ++r) {
      const int64_t row = kChunk[r] + kContext[r];
      for (int n = 1; n <= max_batch; ++n) {
        const auto nn = static_cast<std::size_t>(n);
        const std::array<int64_t, 2> input_shape{n, row};
        const std::array<int64_t, 3> state_shape{2, n, kSileroStateWidth};
        const std::array<int64_t, 2> output_shape{n, 1};
        bound[r].push_back(Bound{
            {Ort::Value::CreateTensor<float>(mem, input.data(), nn * static_cast<std::size_t>(row),
                                             input_shape.data(), 2),
             Ort::Value::CreateTensor<float>(mem, state_in.data(), nn * kSileroStateSize, state_shape.data(), 3),
             Ort::Value::CreateTensor<int64_t>(mem, &sr_values[r], 1, nullptr, 0)},
            {Ort::Value::CreateTensor<float>(mem, output.data(), nn, output_shape.data(), 2),
             Ort::Value::CreateTensor<float>(mem, state_out.data(), nn * kSileroStateSize, state_shape.data(), 3)}});
      }
    }
  }
};

SileroVad::SileroVad(const SileroConfig& config) {
  if (config.max_batch < 1 || config.max_batch > 4096) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("max_batch must be 1 to 4096, got {}", config.max_batch));
  }
  auto session = runtime::ModelSession::load_file(config.model_path, config.session);
  impl_ = std::make_unique<Impl>(std::move(session), config.max_batch);
}

SileroVad::~SileroVad() = default;
SileroVad::SileroVad(SileroVad&&) noexcept = default;
SileroVad& SileroVad::operator=(SileroVad&&) noexcept = default;

int SileroVad::max_batch() const { return impl_->max_batch; }
const ModelInfo& SileroVad::model_info() const { return impl_->session.info(); }

void SileroVad::run(int sample_rate_hz, std::span<SileroStreamState* const> states,
                    std::span<const float* const> chunks, std::span<float> probs) {
  Impl& m = *impl_;
  const auto r = static_cast<std::size_t>(rate_index(sample_rate_hz));
  const std::size_t n = states.size();
  if (n == 0) return;
  if (n > static_cast<std::size_t>(m.max_batch) || chunks.size() != n || probs.size() < n) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("SileroVad::run: {} states, {} chunks, {} outputs for max batch {}", n,
                            chunks.size(), probs.size(), m.max_batch));
  }
  const auto ctx = static_cast<std::size_t>(kContext[r]);
  const auto chunk = static_cast<std::size_t>(kChunk[r]);
  const std::size_t row = ctx + chunk;
  constexpr std::size_t kW = kSileroStateWidth;
  // Pack: row i = [context_i | chunk_i]; state [2, n, 128] with stream i at [layer][i].
  for (std::size_t i = 0; i < n; ++i) {
    float* dst = m.input.data() + i * row;
    std::memcpy(dst, states[i]->context.data(), ctx * sizeof(float));
    std::memcpy(dst + ctx, chunks[i], chunk * sizeof(float));
    for (std::size_t layer = 0; layer < 2; ++layer) {
      std::memcpy(m.state_in.data() + (layer * n + i) * kW, states[i]->state.data() + layer * kW, kW * sizeof(float));
    }
  }
  Impl::Bound& b = m.bound[r][n - 1];
  try {
    m.session.session().Run(m.session.run_options(), m.input_name_ptrs.data(), b.inputs.data(), b.inputs.size(),
                            m.output_name_ptrs.data(), b.outputs.data(), b.outputs.size());
  } catch (const Ort::Exception& e) {
    throw Error(ErrorCode::kRuntime, fmt::format("Silero VAD run of {} stream(s) on '{}' failed: {}", n,
                                                 m.session.info().source, e.what()));
  }
  // Unpack: the new state, and the new context is the tail of what was just fed.
  for (std::size_t i = 0; i < n; ++i) {
    probs[i] = m.output[i];
    for (std::size_t layer = 0; layer < 2; ++layer) {
      std::memcpy(states[i]->state.data() + layer * kW, m.state_out.data() + (layer * n + i) * kW, kW * sizeof(float));
    }
    std::memcpy(states[i]->context.data(), m.input.data() + i * row + row - ctx, ctx * sizeof(float));
  }
}

void SileroVad::cancel_run() noexcept { impl_->session.cancel_run(); }

void SileroVad::clear_cancel() noexcept { impl_->session.clear_cancel(); }

std::vector<float> SileroVad::probabilities(std::span<const float> audio, int sample_rate_hz) {
  const auto chunk = static_cast<std::size_t>(silero_chunk_samples(sample_rate_hz));
  const std::size_t num_chunks = (audio.size() + chunk - 1) / chunk;
  std::vector<float> probs(num_chunks);
  std::vector<float> padded(chunk, 0.0f);
  SileroStreamState state;
  SileroStreamState* state_ptr = &state;
  for (std::size_t c = 0; c < num_chunks; ++c) {
    const std::size_t begin = c * chunk;
    const float* data = audio.data() + begin;
    if (begin + chunk > audio.size()) {  // the last partial chunk is zero-padded, as the reference
      std::fill(padded.begin(), padded.end(), 0.0f);
      std::copy(audio.begin() + static_cast<std::ptrdiff_t>(begin), audio.end(), padded.begin());
      data = padded.data();
    }
    run(sample_rate_hz, std::span(&state_ptr, 1), std::span(&data, 1), std::span(&probs[c], 1));
  }
  return probs;
}

}  // namespace brisvox
