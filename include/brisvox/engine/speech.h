// Text-to-speech on the engine: a speech session (Speech) takes text and gives back audio, sentence
// by sentence, synthesised by a voice of the engine's registry (Piper: ModelSpec::piper_tts).
//
//   EngineConfig ec;
//   ec.models.push_back(ModelSpec::piper_tts("en_US-joe-medium"));    // named "tts"
//   Engine engine(ec);
//   Speech speech = engine.open_speech(SpeechConfig{});               // Error(kOverloaded) at capacity
//   const std::uint32_t id = speech.speak("Hello. How can I help?");  // checks the text, queues it
//   Event events[16];
//   while (true) {
//     speech.wait_events(std::chrono::milliseconds(100));
//     for (std::size_t i = 0, n = speech.poll(events); i < n; ++i) {
//       if (events[i].type == EventType::kTtsAudio) play(speech.read_audio_payload(events[i]));
//       if (events[i].type == EventType::kTtsEnd) ...;             // the utterance is done
//     }
//   }
//   speech.cancel();   // barge-in: stops within one sentence; kTtsCancelled for each utterance
//
// How it runs. A session is a job of its voice's pool (src/engine/speech/speech_pool.h), pinned to
// one worker (one synthesizer each: Piper's has its own ONNX Runtime session handle and espeak-ng
// children) when it is opened. Utterances of one session are spoken one after another, in the order of speak(). A job
// takes one sentence per step: the first step phonemizes the whole utterance (espeak-ng) and runs
// the first sentence; after each step the job is queued again behind the other sessions of that
// worker, so concurrent utterances interleave sentence by sentence and each gets its first audio
// after one sentence of each utterance queued before it, not after whole replies.
//
// Flow control, never silent loss: audio goes through the session's bounded payload channel.
// When the channel (or the event ring) is full the job stops before its next sentence and waits;
// the reader reading (poll, read_payload) wakes it. A reader that stops reading stops synthesis;
// nothing is dropped. A sentence longer than half the channel comes as several kTtsAudio pieces.
//
// Events (events.h), each with `speech` = {utterance_id, sentence_index, sentence_count} (chunks:
// whole sentences, except the first sentence's two parts with SpeechConfig::fast_start):
//   kTtsAudio      a piece of one sentence: payload float32 mono at sample_rate_hz(), in [-1, 1];
//                  start_s / end_s: where the piece lies in the utterance's audio
//   kTtsEnd        the utterance's last audio was delivered; end_s = its length in seconds
//   kTtsCancelled  stopped by cancel(); end_s = the audio delivered before it stopped
//   kError         the utterance failed (error_code; last_error() says why): espeak-ng died, a
//                  sentence is longer than one model run takes, the run failed or passed
//                  EngineConfig::run_timeout_ms. The session goes on with its next utterance.
//   kTtsMark       a mark (mark()) was reached: speech.utterance_id is its id
// Every utterance ends with exactly one of kTtsEnd, kTtsCancelled, kTtsInterrupted (a call's
// barge-in, call.h), kError.
//
// Threads. speak(), cancel() and close() on a controlling thread (speak and cancel may also be
// called from different threads: they lock); poll(), read_payload(), read_audio_payload() and
// wait_events() on one consumer thread (it may be the same). No call waits for inference.
// A Speech must not outlive its Engine.
//
// Memory: the payload channel (payload_buffer_bytes, 512 KiB by default) and a 64-event ring per
// session, allocated at open; the queued texts; on the worker, one sentence's audio at a time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "brisvox/engine/events.h"

namespace brisvox {

class Engine;
namespace engine {
struct SpeechState;
}

struct SpeechConfig {
  std::string model = "tts";  // a text-to-speech entry of EngineConfig::models (a voice)
  // Rate of the audio: 0 (the voice's own), 8000, 16000, 24000 or 48000 (resampled per sentence
  // with libsoxr).
  int sample_rate_hz = 0;
  // The voice's own settings for this session, by the names its family gives them (Piper:
  // "noise_scale", "length_scale" (> 1 speaks slower), "noise_w_scale", "speaker_id";
  // docs/MODELS.md). Each one left out is the model's (ModelSpec::options), else the voice's.
  // open_speech refuses a name the voice does not take, or a value out of its range
  // (Error(kInvalidArgument) naming it). Piper: noise_scale 0 and noise_w_scale 0 make the audio
  // deterministic.
  std::map<std::string, double, std::less<>> voice_options;
  float volume = 1.0f;                // after the voice's peak normalisation; 0 to 10
  // The first sentence of each utterance comes as two chunks: its first clause (up to the first
  // ',', ';' or ':'), synthesised alone, then the rest. The first audio then costs one clause's
  // model run instead of one sentence's; sentence_index and sentence_count count chunks. false:
  // every chunk a whole sentence, the voice's own audio exactly.
  bool fast_start = true;
  // Bytes of audio the session holds for its reader: synthesis waits while they are full. A
  // sentence's audio comes in pieces of at most half of it. 0: 512 KiB (about 6 s at 22050 Hz).
  // Otherwise 16384 to 268435456.
  int payload_buffer_bytes = 0;
  int max_queued = 16;  // utterances waiting behind the current one; speak() refuses beyond (1 to 4096)
  // Called on a worker thread whenever new events are ready to poll(). Must be quick and must not
  // call into the engine (post a notification to your own loop). May be empty.
  std::function<void()> on_events;

  void validate() const;  // Error(kInvalidArgument) naming the field
};

// A handle to one speech session. Move-only; destroying it closes the session.
class Speech {
 public:
  Speech() = default;
  Speech(Speech&&) noexcept;
  Speech& operator=(Speech&&) noexcept;
  ~Speech();

  explicit operator bool() const noexcept { return state_ != nullptr; }
  std::uint64_t id() const noexcept;
  int sample_rate_hz() const noexcept;  // of every kTtsAudio payload
  std::size_t max_text_bytes() const noexcept;  // what speak() takes at most (UTF-8 bytes)

  // Queues `text` (UTF-8) after the utterances spoken before it; returns its utterance id (1, 2,
  // ... per session). The text is checked here, before anything is queued: Error(kInvalidArgument)
  // for empty or blank text, text over max_text_bytes(), invalid UTF-8 or control characters
  // other than tab/CR/LF (the message says which and where); Error(kOverloaded) when max_queued
  // utterances wait already; Error(kClosed) after close() or once the engine is shutting down.
  // Text with nothing to say ("...") gives a kTtsEnd without audio. Never waits for inference.
  std::uint32_t speak(std::string_view text);
  // Barge-in: stops every utterance spoken so far. The one being synthesised stops before its next
  // sentence (a sentence in a model run at that moment is discarded when the run ends); queued
  // ones never start; audio not yet delivered is dropped; each gets kTtsCancelled. Audio already
  // delivered stays readable: skip kTtsAudio events whose utterance_id <= the returned id. Returns
  // the last utterance id cancelled (0 when nothing was spoken). Never waits.
  std::uint32_t cancel();
  // A mark in the queue of what is spoken: once every utterance spoken before it has been
  // delivered (or stopped), a kTtsMark event with its id (end_s: when playback reaches it, by a
  // clock that plays the delivered audio in real time). A stop (cancel) reaches the marks queued
  // before it at once. Returns its id (from the utterances' sequence). Error(kOverloaded) and
  // Error(kClosed) as speak(). Never waits.
  std::uint32_t mark();

  // Moves up to out.size() pending events into `out`; returns how many. Never blocks.
  std::size_t poll(std::span<Event> out);
  // The payload of a kTtsAudio event, copied into `out` (at least event.payload_bytes); returns the
  // bytes copied, 0 when it is gone or `out` is too small. Older unread payloads are skipped
  // (counted in payloads_skipped()). Frees room in the channel: a waiting synthesis goes on.
  std::size_t read_payload(const Event& event, std::span<std::byte> out);
  // The same as float samples (allocates the vector); empty when the payload is gone.
  std::vector<float> read_audio_payload(const Event& event);
  // Waits until an event is pending or the timeout. True if one is. Sleeps until the worker that
  // writes the event wakes it (no polling).
  bool wait_events(std::chrono::microseconds timeout);
  // Message of the last kError event ("" if none).
  std::string last_error() const;
  // Payloads the reader skipped (read a later one first) so far.
  std::uint64_t payloads_skipped() const noexcept;

  // Ends the session now: queued and unfinished utterances are dropped without events, and the
  // worker frees the session. Idempotent.
  void close();

 private:
  friend class Engine;
  friend class Call;
  explicit Speech(std::shared_ptr<engine::SpeechState> state);
  std::shared_ptr<engine::SpeechState> state_;
};

}  // namespace brisvox
