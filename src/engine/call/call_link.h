// What links a call's two sides (call.h): the barge-in stage, on the stream's VAD worker, and the
// call's owner, on its consumer thread. The stage holds it for as long as the stream lives, the
// owner's Call for as long as the call is open.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "engine/speech/speech_state.h"
#include "engine/sync/reader_wake.h"

namespace brisvox::engine {

struct CallLink {
  // The call's speech session: the barge-in stage stops it (SpeechState::stop) from the VAD worker.
  std::shared_ptr<SpeechState> speech;
  // One wake-up for both sides' events: the owner waits on it (Call::wait_events).
  std::shared_ptr<ReaderWake> wake = std::make_shared<ReaderWake>();
  // The playout clock, written by the owner as poll() hands speech out, read by the barge-in
  // stage: when the audio handed out so far will have played, and whose audio that was.
  std::atomic<std::int64_t> playout_end_ns{0};
  std::atomic<std::uint32_t> audible_id{0};
  // Barge-ins so far (the stage counts, the owner compares): a new one releases held marks and
  // drops held audio even before the owner reads its kBargeIn.
  std::atomic<std::uint32_t> barge_ins{0};

  // Whether the caller would hear the call now: audio playing by the clock, or an utterance queued
  // or in progress.
  bool speaking(std::int64_t now_ns) const noexcept {
    return now_ns < playout_end_ns.load(std::memory_order_acquire) || speech->speaking();
  }
};

}  // namespace brisvox::engine
