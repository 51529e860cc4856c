#include "engine/stream/stream_slot.h"

#include <algorithm>
#include <cmath>

#include "engine/stages/stt_stage.h"
#include "engine/stages/turn_stage.h"

namespace brisvox::engine {
namespace {

// Events the ring keeps free for speech events: probability events are dropped before these.
constexpr std::size_t kReservedForSpeech = 8;
constexpr std::size_t kEventCapacity = 32;

// The model-rate samples a segment's audio may need: the longest segment kept, plus what the
// segmenter looks ahead before it ends one (min silence), the padding on both sides and a frame.
std::size_t segment_history_samples(const VadOptions& vad, double max_segment_s, int model_rate_hz, int chunk_samples) {
  const double seconds = max_segment_s + (vad.params.min_silence_ms + 2.0 * vad.params.speech_pad_ms) / 1000.0;
  return static_cast<std::size_t>(std::ceil(seconds * model_rate_hz)) + static_cast<std::size_t>(chunk_samples);
}

}  // namespace

StreamSlot::StreamSlot(std::uint64_t stream_id, const StreamConfig& stream_config, VadPool& pool, int vad_worker,
                       std::unique_ptr<TurnStreamState> turn_state, std::unique_ptr<SttStreamState> stt_state)
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
      max_segment_samples(static_cast<std::int64_t>(std::ceil(stream_config.vad.max_segment_audio_s * model_rate_hz))),
      turn(std::move(turn_state)),
      stt(std::move(stt_state)),
      events(kEventCapacity) {
  worker = vad_worker;
  key = vad_rate_key(model_rate_hz);
  std::size_t history_samples = 0;
  if (turn) history_samples = std::max(history_samples, TurnStreamState::history_samples(model_rate_hz));
  std::size_t payload_bytes = 0;
  if (stt) {
    history_samples =
        std::max(history_samples, segment_history_samples(config.vad, kSttMaxSegmentS, model_rate_hz, chunk_samples));
    // Transcripts: a header and the text, a few hundred bytes each; room for a few dozen.
    payload_bytes += 16 * 1024;
  }
  if (config.vad.segment_audio) {
    history_samples = std::max(history_samples, segment_history_samples(config.vad, config.vad.max_segment_audio_s,
                                                                        model_rate_hz, chunk_samples));
    payload_bytes += static_cast<std::size_t>(max_segment_samples) * sizeof(float);
  }
  if (history_samples > 0) history.emplace(history_samples);
  if (payload_bytes > 0) {
    const std::size_t capacity =
        config.payload_buffer_bytes > 0 ? static_cast<std::size_t>(config.payload_buffer_bytes) : payload_bytes;
    payloads = std::make_unique<PayloadChannel>(capacity);
  }
  if (stream_config.sample_rate_hz != model_rate_hz) {
    resampler.emplace(stream_config.sample_rate_hz, model_rate_hz, kResamplerBlock);
    resampled.resize(resampler->max_output_for(kResamplerBlock));
  }
}

StreamSlot::~StreamSlot() = default;

bool StreamSlot::emit(const Event& event) {
  const std::size_t free = events.free_space();
  const bool droppable = event.type == EventType::kVadProbability;
  if (free == 0 || (droppable && free <= kReservedForSpeech)) {
    events_dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  events.write(std::span(&event, 1));
  events_wake.published();
  unannounced_events = true;
  return true;
}

bool StreamSlot::emit_with_payload(Event event, std::span<const std::byte> a, std::span<const std::byte> b,
                                   bool truncated) {
  const std::uint32_t payload_id = next_payload_id++;
  if (payloads && payloads->write(payload_id, a, b)) {
    event.payload = truncated ? PayloadStatus::kTruncated : PayloadStatus::kAttached;
    event.payload_bytes = static_cast<std::uint32_t>(a.size() + b.size());
    event.payload_id = payload_id;
  } else {
    event.payload = PayloadStatus::kDropped;
    payloads_dropped.fetch_add(1, std::memory_order_relaxed);
  }
  return emit(event);
}

void StreamSlot::set_error(std::string message) {
  std::lock_guard lock(error_mutex);
  last_error = std::move(message);
}

}  // namespace brisvox::engine
