// A call: one caller, listened to and spoken to at once. A stream (the caller's audio in; speech,
// turn and transcript events out) and a speech session (text in, audio out) under one owner, with
// barge-in between them: when the caller's speech is confirmed while the call is speaking, the
// speech stops within the VAD frame that confirmed it, and the owner learns which utterance was
// being heard.
//
//   CallConfig cc;
//   cc.listen.sample_rate_hz = 8000;          // the caller's audio, and the rate of the call's speech
//   cc.listen.turn = TurnOptions{};           // end-of-turn events ...
//   cc.listen.stt = SttOptions{};             // ... and transcripts (the engine needs those models)
//   Call call = engine.open_call(cc);         // Error(kOverloaded) at capacity
//   call.push(samples);                       // the caller; never waits for inference
//   call.speak("Sure. What time suits you?"); // a reply: its audio comes as kTtsAudio events
//   call.mark();                              // echoed as kTtsMark when playback reaches it
//   Event events[32];
//   for (std::size_t n = call.poll(events), i = 0; i < n; ++i) {
//     switch (events[i].type) {
//       case EventType::kTtsAudio: play(call.read_audio_payload(events[i])); break;
//       case EventType::kBargeIn: stop_playing(); break;  // the caller talked over the reply
//       case EventType::kTranscript: answer(call.read_transcript(events[i])->text); break;
//       ...
//     }
//   }
//
// Events: the stream's (speech.h's list for a Stream: kSpeechStart, kSpeechEnd, kTurnEnd,
// kTranscript, ...), the speech session's (kTtsAudio, kTtsEnd, kTtsCancelled, kError with
// `speech` set, kTtsMark), and the call's own:
//   kBargeIn         the caller's confirmed speech stopped the call's speech (BargeInOptions). Every
//                    utterance spoken so far stops: the ones not finished end with kTtsInterrupted;
//                    speech.utterance_id is the one being heard then (0: none yet), which may have
//                    ended with kTtsEnd already (all its audio was out, and it was still playing).
//                    Held marks are released at once, and no more audio of a stopped utterance
//                    comes out of poll().
//   kTtsInterrupted  an utterance stopped by a barge-in (end_s: the audio of it handed out). An
//                    utterance made whole but stopped before all its audio came out of poll() ends
//                    so too (or with kTtsCancelled for cancel()), not with kTtsEnd.
// Every utterance ends with exactly one of kTtsEnd, kTtsCancelled (cancel()), kTtsInterrupted,
// kError. A stopped utterance's end_s is the audio of it that poll() handed out. A kError of the speech side (an utterance failed: speech.utterance_id says which) has
// payload_id 1 and no payload; one of the stream's has payload_id 0. last_error(event) reads its
// side's message.
//
// Playout. The call assumes its owner plays the speech it hands out in real time, from the moment
// poll() hands it out. It hands audio out at most playout_lead_ms ahead of that clock (the rest
// waits in the engine, holding back the synthesis), so that a barge-in cuts the reply within the
// lead, what was sent is close to what was heard, and a kTtsMark comes out when the clock reaches
// it. next_due() says when poll() will have held events to give; wait_events() wakes then too.
//
// Threads: push/writable/flush on one producer thread; speak/mark/cancel/close on a controlling
// thread (speak and cancel lock and may come from others); poll/read_*/wait_events on one
// consumer thread. Nothing waits for inference. A Call must not outlive its Engine.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/events.h"
#include "brisvox/engine/speech.h"

namespace brisvox {

class Engine;
class Stream;
struct Transcript;
namespace engine {
struct CallState;
}

struct BargeInOptions {
  bool enabled = true;
  // The caller's speech is confirmed after this much of it: VAD frames scored as speech
  // (probability >= the VAD's threshold) since the speech started. A backchannel ("mm-hm", "okay")
  // shorter than this does not interrupt. 32 to 10000.
  int min_speech_ms = 400;
  // Interrupt only when the caller's turn ends (a kTurnEnd while the call is speaking: the caller
  // finished a sentence over the reply), not on confirmed speech. Needs listen.turn.
  bool on_turn_end = false;
};

struct CallConfig {
  // The caller's side: its rate (sample_rate_hz) is the call's, and the pipeline (vad, turn, stt).
  // on_events is the call's own (below) and must be left empty here.
  StreamConfig listen;
  // The call's voice and its settings. sample_rate_hz 0: the call's rate (the voice must be able to
  // speak at it: 8000, 16000, 24000, 48000 or its own). payload_buffer_bytes 0: room for two pieces
  // of about 100 ms (at least 16 KiB), so that the playout lead is kept closely. on_events must be
  // left empty here.
  SpeechConfig speak;
  BargeInOptions barge_in;
  // How far ahead of real-time playback poll() hands out the call's speech; 0: as soon as it is
  // made (the owner paces it). 0 to 60000.
  int playout_lead_ms = 500;
  // Called on a worker thread whenever either side has new events. Must be quick and must not
  // call into the engine. May be empty.
  std::function<void()> on_events;

  void validate() const;  // Error(kInvalidArgument) naming the field
};

// A handle to one call. Move-only; destroying it closes the call.
class Call {
 public:
  Call();
  Call(Call&&) noexcept;
  Call& operator=(Call&&) noexcept;
  ~Call();

  explicit operator bool() const noexcept;
  std::uint64_t id() const noexcept;  // the stream's id
  int sample_rate_hz() const noexcept;         // of push()
  int speech_sample_rate_hz() const noexcept;  // of kTtsAudio payloads (the call's rate)
  // The listening side's configuration as the engine runs it (Stream::config()).
  const StreamConfig& listen_config() const;
  int model_rate_hz() const noexcept;  // of the stream's event times

  // --- the caller's audio (Stream's contract) --------------------------------------------------
  std::size_t push(std::span<const float> samples);
  std::size_t writable();
  bool wait_writable(std::size_t min_samples, std::chrono::microseconds timeout);
  bool can_flush();
  // End of the caller's audio: final events, then kEndOfStream. The speech side goes on until
  // close().
  void flush();

  // --- the call's speech (Speech's contract) ---------------------------------------------------
  std::uint32_t speak(std::string_view text);
  std::uint32_t mark();
  // Stops every utterance spoken so far (kTtsCancelled); returns the last one stopped.
  std::uint32_t cancel();
  std::size_t max_text_bytes() const noexcept;

  // --- both sides' events ----------------------------------------------------------------------
  // Moves up to out.size() events into `out`: the stream's first, then the speech's as the
  // playout lead allows, then marks whose time has come. `speech` false: the stream's only (an
  // owner whose own output is full holds the speech back, never the caller's events). Never
  // blocks.
  std::size_t poll(std::span<Event> out, bool speech = true);
  // The payload of an event poll() returned (a segment's audio, a transcript, a piece of speech).
  std::size_t read_payload(const Event& event, std::span<std::byte> out);
  std::vector<float> read_audio_payload(const Event& event);
  std::optional<Transcript> read_transcript(const Event& event);
  // Waits until poll() has something to give (an event of either side, a held event come due), or
  // the timeout. Sleeps until a worker wakes it or the next held event is due.
  bool wait_events(std::chrono::microseconds timeout);
  // When poll() will next have a held event to give (audio within the lead, a mark); nullopt when
  // none is held.
  std::optional<std::chrono::steady_clock::time_point> next_due() const;
  // The message of a kError event poll() returned (its side's last error: valid until that side's
  // next error).
  std::string last_error(const Event& event) const;

  // Ends the call now: the stream's pending audio and events and the unspoken speech are dropped.
  // Idempotent.
  void close();

 private:
  friend class Engine;
  explicit Call(std::shared_ptr<engine::CallState> state);
  std::shared_ptr<engine::CallState> state_;
};

}  // namespace brisvox
