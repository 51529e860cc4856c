// Everything one speech session owns (speech.h): the utterances waiting to be spoken (control
// side), the synthesis in progress and the outputs not yet delivered (worker side), and the event
// ring and payload channel its reader drains. Allocated at open_speech; one per session.
//
// A session is a job of its voice's pool (PoolJob), pinned to one worker, which alone touches the
// worker-side fields; between sentences, while it waits in that worker's queue, a worker out of
// work may take it over (BatchPool, MovesJobs), the fields handed over under the first's mutex.
// Its key says what its next step is: kTtsStartKey (the first sentence of an utterance: a caller
// waits for it) or kTtsContinueKey (a later sentence, due only when the one before it has partly
// played). Who schedules it: speak() (a new utterance), cancel(), close(), and the reader when it
// frees room the worker waits for (`waiting`).
//
// Lifetime: the session keeps itself alive (`self`) from open until its worker retires it after
// close(): the handle may go while the job still sits in a ready queue. The worker moves `self`
// into its retired list and frees it once the job is no longer queued (TtsAdapter::after_batch).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "brisvox/engine/speech.h"
#include "brisvox/models/tts/piper_tts.h"
#include "engine/pool/pool_job.h"
#include "engine/stream/payload_channel.h"
#include "engine/stream/spsc_ring.h"
#include "engine/stream/wait_for_events.h"

namespace brisvox::engine {

// The two keys of a voice's pool (PoolShape::num_keys 2); both run one sentence, max_batch 1.
inline constexpr int kTtsStartKey = 0;
inline constexpr int kTtsContinueKey = 1;
inline constexpr int kTtsKeys = 2;

class TtsPool;

struct Utterance {
  std::uint32_t id = 0;
  std::string text;
  std::int64_t submitted_ns = 0;  // when speak() queued it (time to first audio starts here)
};

// An output the worker has made and not yet delivered: an event, with a piece of `sentence_audio`
// as its payload when it is a kTtsAudio.
struct PendingOutput {
  Event event;
  std::size_t audio_begin = 0;  // [begin, end) of SpeechSlot::sentence_audio
  std::size_t audio_end = 0;
  bool last_piece = false;      // the sentence's last piece (counts the sentence as delivered)
};

// What `waiting` holds: the room the worker waits for before it can deliver its next output.
inline constexpr std::uint8_t kWaitEvents = 1;   // the event ring is full: poll() wakes it
inline constexpr std::uint8_t kWaitPayload = 2;  // the payload channel is full: read_payload() wakes it

struct SpeechSlot : PoolJob {
  // `payload_bytes`: the channel's room (resolved from SpeechConfig::payload_buffer_bytes).
  SpeechSlot(std::uint64_t session_id, const SpeechConfig& speech_config, TtsPool& tts_pool, int tts_worker,
             int output_rate_hz, std::size_t payload_bytes, const PiperRequest& request_options);

  const std::uint64_t id;
  const SpeechConfig config;
  const int sample_rate_hz;      // of the audio delivered
  TtsPool* const pool;
  const PiperRequest options;    // the session's synthesis options (text empty)
  const std::size_t piece_samples;  // most samples in one kTtsAudio payload

  // --- control side (speak, cancel, close; any thread) ----------------------------------------
  std::mutex mu;
  std::deque<Utterance> to_speak;        // (mu) queued by speak(), in order
  std::uint32_t last_spoken = 0;         // (mu) the id of the last speak()
  bool closed = false;                   // (mu) close() was called
  std::atomic<std::uint32_t> cancelled_upto{0};  // utterances with id <= this are cancelled
  std::atomic<bool> close_requested{false};
  // kWait* bits while the worker waits for room; cleared by whoever wakes it.
  std::atomic<std::uint8_t> waiting{0};
  std::shared_ptr<SpeechSlot> self;      // keeps the session alive until its worker retires it

  // --- worker side ------------------------------------------------------------------------------
  struct Current {
    Utterance utterance;
    PiperSynthesis synthesis;
    bool started = false;                // start() ran (the text is phonemized)
  };
  std::optional<Current> current;        // the utterance being synthesised
  std::deque<PendingOutput> outbox;      // made, not yet delivered, in order
  std::vector<float> sentence_audio;     // the audio the outbox's pieces refer to
  std::uint32_t cancel_applied = 0;      // cancelled_upto already acted on
  // What was delivered of the utterance whose audio was delivered last (for kTtsCancelled).
  std::uint32_t delivering_id = 0;
  std::uint64_t delivered_samples = 0;
  std::uint16_t delivered_sentences = 0;
  std::uint64_t utterance_samples = 0;   // samples made so far for the current utterance
  std::int64_t first_audio_ns = 0;       // when the current utterance's first chunk was made
  std::int64_t step_ready_ns = 0;        // when the next sentence became ready (its queue delay's start)
  bool retired = false;

  // --- events and payloads (worker -> reader) -------------------------------------------------
  SpscRing<Event> events;
  ReaderWake events_wake;                // wakes a reader blocked in Speech::wait_events
  PayloadChannel payloads;
  std::uint32_t next_payload_id = 1;     // worker
  std::atomic<std::uint64_t> payloads_skipped{0};  // reader
  mutable std::mutex error_mutex;
  std::string last_error;

  void set_error(std::string message);
  double seconds(std::uint64_t samples) const noexcept {
    return static_cast<double>(samples) / sample_rate_hz;
  }
};

}  // namespace brisvox::engine
