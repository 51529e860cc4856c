#include "engine/stream/stream_state.h"

#include <algorithm>
#include <cmath>

namespace brisvox::engine {
namespace {

constexpr std::size_t kEventCapacity = 32;

std::int64_t max_segment_samples_of(const StreamConfig& c, int model_rate_hz) {
  return static_cast<std::int64_t>(std::ceil(c.vad.max_segment_audio_s * model_rate_hz));
}

// The history the stages and the segment audio need (0: none).
std::size_t history_samples_of(const StreamConfig& c, int model_rate_hz, int chunk_samples,
                               const std::vector<std::unique_ptr<Stage>>& stages) {
  std::size_t n = 0;
  for (const auto& stage : stages) n = std::max(n, stage->history_samples(model_rate_hz, chunk_samples, c.vad));
  if (c.vad.segment_audio) {
    n = std::max(n, segment_history_samples(c.vad, c.vad.max_segment_audio_s, model_rate_hz, chunk_samples));
  }
  return n;
}

// The payload channel's room: StreamConfig::payload_buffer_bytes, or enough for one payload of
// each stage that makes them (0: the stream makes none, and has no channel).
std::size_t payload_bytes_of(const StreamConfig& c, int model_rate_hz,
                             const std::vector<std::unique_ptr<Stage>>& stages) {
  std::size_t n = 0;
  for (const auto& stage : stages) n += stage->payload_bytes();
  if (c.vad.segment_audio) n += static_cast<std::size_t>(max_segment_samples_of(c, model_rate_hz)) * sizeof(float);
  if (n == 0) return 0;
  return c.payload_buffer_bytes > 0 ? static_cast<std::size_t>(c.payload_buffer_bytes) : n;
}

}  // namespace

std::size_t segment_history_samples(const VadOptions& vad, double max_segment_s, int model_rate_hz, int chunk_samples) {
  const double seconds = max_segment_s + (vad.params.min_silence_ms + 2.0 * vad.params.speech_pad_ms) / 1000.0;
  return static_cast<std::size_t>(std::ceil(seconds * model_rate_hz)) + static_cast<std::size_t>(chunk_samples);
}

StreamState::StreamState(std::uint64_t stream_id, const StreamConfig& stream_config, VadPool& pool, int vad_worker,
                         std::vector<std::unique_ptr<Stage>> pipeline, std::shared_ptr<ReaderWake> shared_wake)
    : id(stream_id),
      config(stream_config),
      model_rate_hz(silero_model_rate_hz(stream_config.sample_rate_hz, stream_config.vad.model_rate_hz)),
      chunk_samples(silero_chunk_samples(model_rate_hz)),
      vad_pool(&pool),
      samples(ring_capacity_for(static_cast<std::size_t>(model_rate_hz) * static_cast<std::size_t>(stream_config.buffer_ms) / 1000,
                                2 * static_cast<std::size_t>(chunk_samples))),
      frame_complete_ns(samples.capacity() / static_cast<std::size_t>(chunk_samples)),
      frame_time_mask(frame_complete_ns.size() - 1),
      segmenter(model_rate_hz, stream_config.vad.params),
      max_segment_samples(max_segment_samples_of(stream_config, model_rate_hz)),
      stages(std::move(pipeline)),
      output(kEventCapacity, payload_bytes_of(stream_config, model_rate_hz, stages), stream_config.on_events,
             std::move(shared_wake)) {
  worker = vad_worker;
  key = vad_rate_key(model_rate_hz);
  if (const std::size_t n = history_samples_of(config, model_rate_hz, chunk_samples, stages); n > 0) history.emplace(n);
  if (stream_config.sample_rate_hz != model_rate_hz) {
    resampler.emplace(stream_config.sample_rate_hz, model_rate_hz, kResamplerBlock);
    resampled.resize(resampler->max_output_for(kResamplerBlock));
  }
}

StreamState::~StreamState() = default;

bool StreamState::stages_hold_frames() const noexcept {
  return std::any_of(stages.begin(), stages.end(), [](const auto& st) { return st->holds_frames(); });
}
bool StreamState::stages_defer_end() const noexcept {
  return std::any_of(stages.begin(), stages.end(), [](const auto& st) { return st->defers_end(); });
}
bool StreamState::stages_busy() const noexcept {
  return std::any_of(stages.begin(), stages.end(), [](const auto& st) { return st->busy(); });
}
bool StreamState::stages_pin() const noexcept {
  return std::any_of(stages.begin(), stages.end(), [](const auto& st) { return st->pins_stream(); });
}

}  // namespace brisvox::engine
