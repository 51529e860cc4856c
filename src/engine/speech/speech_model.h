// What the engine and a Speech handle need of a voice's pool, whatever its family: open a session,
// schedule it, check a text before it is queued. SpeechPool<S> (speech_pool.h) is the one
// implementation, generic over the family's synthesizer (synthesizer.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "brisvox/engine/speech.h"
#include "engine/pool/batch_pool.h"
#include "engine/sync/reader_wake.h"

namespace brisvox::engine {

struct SpeechState;

// SpeechConfig::payload_buffer_bytes 0: 512 KiB of ring (the channel rounds up to a power of two
// including its 8-byte record header), about 6 s of float32 audio at 22050 Hz.
inline constexpr std::size_t kDefaultSpeechPayloadBytes = (std::size_t{512} << 10) - 64;

class SpeechModel : public ModelPool {
 public:
  using ModelPool::ModelPool;

  // A new session pinned to the least loaded worker. Error(kInvalidArgument) for options the
  // voice refuses, Error(kOverloaded) when max_pending sessions are open, Error(kClosed) while
  // shutting down.
  // `shared_wake`: the reader's wake-up when it shares one with another session (a call), else null.
  virtual std::shared_ptr<SpeechState> open(const SpeechConfig& config, std::uint64_t id,
                                            std::shared_ptr<ReaderWake> shared_wake = nullptr) = 0;
  // Any thread: the session has work (or room, or a cancel). Cheap when it is already queued.
  virtual void schedule(SpeechState& s) = 0;
  // Error(kInvalidArgument) for a text the voice cannot take (empty, too long, invalid UTF-8,
  // control characters), saying which and where. Any thread.
  virtual void check_text(std::string_view text) const = 0;
  virtual std::size_t max_text_bytes() const noexcept = 0;

  // Engine::drain(): from now on open() and speak() refuse with Error(kClosed).
  void refuse_new_work() noexcept { draining_.store(true, std::memory_order_release); }
  bool accepting() const noexcept { return !draining_.load(std::memory_order_acquire) && !stopping(); }
  bool stopping() const noexcept { return stopping_.load(std::memory_order_acquire); }

 protected:
  std::atomic<bool> draining_{false};  // Engine::drain(): no new sessions or utterances
  std::atomic<bool> stopping_{false};  // the pool is stopping: queued work is abandoned
  std::atomic<int> open_sessions_{0};
};

}  // namespace brisvox::engine
