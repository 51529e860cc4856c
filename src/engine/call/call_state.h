// The owner's side of a call (call.h): its stream and speech session, and the playout clock that
// hands the speech out at most CallConfig::playout_lead_ms ahead of real-time playback. Touched by
// the call's consumer thread only (the handles' own contracts aside).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>

#include "brisvox/engine/speech.h"
#include "brisvox/engine/stream.h"
#include "engine/call/call_link.h"
#include "engine/speech/speech_state.h"

namespace brisvox::engine {

// The owner's side of a call. Consumer thread only, but for the handles' own contracts.
struct CallState {
  CallState(Stream listen_stream, Speech speech_session, std::shared_ptr<CallLink> call_link, int lead_ms)
      : stream(std::move(listen_stream)),
        speech(std::move(speech_session)),
        link(std::move(call_link)),
        lead_ns(std::int64_t{lead_ms} * 1'000'000) {}

  Stream stream;
  Speech speech;
  std::shared_ptr<CallLink> link;
  const std::int64_t lead_ns;
  // A speech event read from the session and not handed out yet: audio beyond the lead (its
  // payload waits in the channel, holding the synthesis back).
  std::optional<Event> held;
  std::int64_t held_due_ns = 0;
  struct HeldMark {
    Event event;
    std::int64_t due_ns;
  };
  std::deque<HeldMark> marks;   // kTtsMark events waiting for the clock, in order
  std::int64_t clock_end_ns = 0;  // when the audio handed out so far will have played
  std::uint32_t barge_ins_seen = 0;
  // The utterance whose audio was handed out last, and how much of it; and the last utterance of
  // which audio was dropped (stopped): its kTtsEnd, if it comes, becomes the stop's event.
  std::uint32_t audio_id = 0;
  double audio_s = 0;
  std::uint32_t dropped_id = 0;

  SpeechState& speech_state() { return *link->speech; }
  // A barge-in (counted by the stage) releases every held mark and drops held audio: playback stopped.
  void take_barge_ins(std::int64_t now) {
    const std::uint32_t n = link->barge_ins.load(std::memory_order_acquire);
    if (n == barge_ins_seen) return;
    barge_ins_seen = n;
    for (HeldMark& m : marks) m.due_ns = now;
    if (held && held->type == EventType::kTtsAudio) drop(*held);
    held.reset();
    clock_end_ns = now;
    link->playout_end_ns.store(now, std::memory_order_release);
  }
  void drop(const Event& e) {
    speech_state().output.discard_payload(e);
    speech_state().room_freed(kWaitPayload);
    dropped_id = std::max(dropped_id, e.speech.utterance_id);
  }
  std::optional<std::int64_t> next_due_ns() const {
    std::optional<std::int64_t> due;
    if (held) due = held_due_ns;
    if (!marks.empty()) due = due ? std::min(*due, marks.front().due_ns) : marks.front().due_ns;
    return due;
  }
};


}  // namespace brisvox::engine
