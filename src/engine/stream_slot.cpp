#include "engine/stream_slot.h"

#include <algorithm>

namespace brisvox::engine {
namespace {

// Events the ring keeps free for speech events: probability events are dropped before these.
constexpr std::size_t kReservedForSpeech = 8;
constexpr std::size_t kEventCapacity = 32;

}  // namespace

StreamSlot::StreamSlot(std::uint64_t stream_id, const StreamConfig& stream_config, int model_rate, Worker* owner)
    : id(stream_id),
      config(stream_config),
      model_rate_hz(model_rate),
      rate_index(model_rate == 16000 ? 0 : 1),
      chunk_samples(silero_chunk_samples(model_rate)),
      worker(owner),
      samples(ring_capacity_for(static_cast<std::size_t>(model_rate) * static_cast<std::size_t>(stream_config.buffer_ms) / 1000,
                                2 * static_cast<std::size_t>(silero_chunk_samples(model_rate)))),
      frame_complete_ns(samples.capacity() / static_cast<std::size_t>(chunk_samples)),
      frame_time_mask(frame_complete_ns.size() - 1),
      segmenter(model_rate, stream_config.vad),
      events(kEventCapacity) {
  if (stream_config.detect_turns) turn = std::make_unique<TurnSlot>(model_rate, chunk_samples, stream_config.turn);
  if (stream_config.sample_rate_hz != model_rate) {
    resampler.emplace(stream_config.sample_rate_hz, model_rate, 1024);
    resampled.resize(resampler->max_output_for(1024));
  }
}

TurnSlot::TurnSlot(int model_rate_hz, int frame_samples, const TurnParams& params)
    : detector(model_rate_hz, frame_samples, params),
      // 8 s analysed + pre-speech + slack for the time an analysis waits: 9.5 s.
      history(static_cast<std::size_t>(model_rate_hz) * 19 / 2, 0.0f) {}

bool StreamSlot::emit(const Event& event) {
  const std::size_t free = events.free_space();
  const bool droppable = event.type == EventType::kVadProbability;
  if (free == 0 || (droppable && free <= kReservedForSpeech)) {
    events_dropped.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  events.write(std::span(&event, 1));
  return true;
}

}  // namespace brisvox::engine
