#include "engine/speech/speech_state.h"

#include <algorithm>

#include "engine/speech/speech_model.h"

namespace brisvox::engine {
namespace {

constexpr std::size_t kSpeechEventCapacity = 64;

}  // namespace

SpeechState::SpeechState(std::uint64_t session_id, const SpeechConfig& speech_config, SpeechModel& speech_model,
                         int worker_index, int output_rate_hz, std::size_t payload_bytes,
                         std::shared_ptr<ReaderWake> shared_wake)
    : id(session_id),
      config(speech_config),
      sample_rate_hz(output_rate_hz),
      model(&speech_model),
      // Half the channel: one piece can always be written while the reader holds the other.
      piece_samples(std::max<std::size_t>(1, payload_bytes / 2 / sizeof(float))),
      output(kSpeechEventCapacity, payload_bytes, speech_config.on_events, std::move(shared_wake)) {
  worker = worker_index;
  key.store(kSpeechStartKey, std::memory_order_relaxed);
}

std::uint32_t SpeechState::stop(bool barge_in) {
  std::uint32_t upto = 0;
  {
    std::lock_guard lock(mu);
    upto = last_spoken.load(std::memory_order_relaxed);
  }
  if (upto == 0) return 0;
  // interrupted_upto first: the worker reads it after it sees cancelled_upto (acquire).
  if (barge_in) interrupted_upto.store(upto, std::memory_order_relaxed);
  cancelled_upto.store(upto, std::memory_order_release);
  // Wakes the job even when it waits for the reader: the stop drops what it waits to deliver.
  waiting.store(0, std::memory_order_release);
  model->schedule(*this);
  return upto;
}

void SpeechState::room_freed(std::uint8_t freed) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if ((waiting.load(std::memory_order_relaxed) & freed) == 0) return;
  if (waiting.exchange(0, std::memory_order_acq_rel) != 0) model->schedule(*this);
}

bool SpeechState::speaking() const noexcept {
  return last_ended.load(std::memory_order_acquire) < last_spoken.load(std::memory_order_acquire);
}

}  // namespace brisvox::engine
