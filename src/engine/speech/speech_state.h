// Everything one speech session owns (speech.h) that does not depend on its voice's family: the
// utterances waiting to be spoken (control side), what the worker made and has not delivered yet,
// and its output (events and payloads for its reader). The synthesis in progress is the family's
// (SpeechJob<S>, speech_pool.h). Allocated at open_speech; one per session.
//
// A session is a job of its voice's pool (PoolJob), pinned to one worker, which alone touches the
// worker-side fields; between sentences, while it waits in that worker's queue, a worker out of
// work may take it over (BatchPool, MovesJobs), the fields handed over under the first's mutex.
// Its key says what its next step is: kSpeechStartKey (the first sentence of an utterance: a
// caller waits for it) or kSpeechContinueKey (a later sentence, due only when the one before it
// has partly played). Who schedules it: speak(), mark(), cancel(), interrupt(), close(), and the
// reader when it frees room the worker waits for (`waiting`).
//
// Lifetime: the session keeps itself alive (`self`) from open until its worker retires it after
// close(): the handle may go while the job still sits in a ready queue. The worker moves `self`
// into its retired list and frees it once the job is no longer queued.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "brisvox/engine/speech.h"
#include "engine/output/session_output.h"
#include "engine/pool/pool_job.h"
#include "engine/sync/reader_wake.h"

namespace brisvox::engine {

// The two keys of a voice's pool (PoolShape::num_keys 2); both run one sentence, max_batch 1.
inline constexpr int kSpeechStartKey = 0;
inline constexpr int kSpeechContinueKey = 1;
inline constexpr int kSpeechKeys = 2;

class SpeechModel;

// What speak() or mark() queued.
struct Utterance {
  std::uint32_t id = 0;
  std::string text;
  std::int64_t submitted_ns = 0;  // when it was queued (time to first audio starts here)
  bool mark = false;              // a mark: nothing to say, a kTtsMark once what precedes it is out
};

// An output the worker has made and not yet delivered: an event, with a piece of `chunk_audio` as
// its payload when it is a kTtsAudio.
struct PendingOutput {
  Event event;
  std::size_t audio_begin = 0;  // [begin, end) of SpeechState::chunk_audio
  std::size_t audio_end = 0;
  bool last_piece = false;      // the chunk's last piece (counts the chunk as delivered)
};

// What `waiting` holds: the room the worker waits for before it can deliver its next output.
inline constexpr std::uint8_t kWaitEvents = 1;   // the event ring is full: poll() wakes it
inline constexpr std::uint8_t kWaitPayload = 2;  // the payload channel is full: read_payload() wakes it

struct SpeechState : PoolJob {
  // `output_rate_hz`: of the audio delivered. `payload_bytes`: the channel's room (resolved from
  // SpeechConfig::payload_buffer_bytes). `shared_wake`: the reader's wake-up when it shares one
  // with another session (a call), else null.
  SpeechState(std::uint64_t session_id, const SpeechConfig& speech_config, SpeechModel& model, int worker,
              int output_rate_hz, std::size_t payload_bytes, std::shared_ptr<ReaderWake> shared_wake);
  virtual ~SpeechState() = default;

  const std::uint64_t id;
  const SpeechConfig config;
  const int sample_rate_hz;      // of the audio delivered
  SpeechModel* const model;
  const std::size_t piece_samples;  // most samples in one kTtsAudio payload

  // --- control side (speak, mark, cancel, interrupt, close; any thread) -------------------------
  std::mutex mu;
  std::deque<Utterance> to_speak;        // (mu) queued, in order
  std::atomic<std::uint32_t> last_spoken{0};  // the id of the last speak() or mark() (written under mu)
  bool closed = false;                   // (mu) close() was called
  std::atomic<std::uint32_t> cancelled_upto{0};    // utterances with id <= this are stopped
  std::atomic<std::uint32_t> interrupted_upto{0};  // ... and those <= this by a barge-in
  std::atomic<std::uint32_t> last_ended{0};        // the worker ended every utterance up to this
  std::atomic<bool> close_requested{false};
  // kWait* bits while the worker waits for room; cleared by whoever wakes it.
  std::atomic<std::uint8_t> waiting{0};
  std::shared_ptr<SpeechState> self;     // keeps the session alive until its worker retires it

  // --- worker side ---------------------------------------------------------------------------
  std::deque<PendingOutput> outbox;      // made, not yet delivered, in order
  std::vector<float> chunk_audio;        // the audio the outbox's pieces refer to
  std::uint32_t cancel_applied = 0;      // cancelled_upto already acted on
  // What was delivered of the utterance whose audio was delivered last (for kTtsCancelled).
  std::uint32_t delivering_id = 0;
  std::uint64_t delivered_samples = 0;
  std::uint16_t delivered_chunks = 0;
  std::uint64_t utterance_samples = 0;   // samples made so far for the current utterance
  std::int64_t first_audio_ns = 0;       // when the current utterance's first chunk was made
  std::int64_t step_ready_ns = 0;        // when the next chunk became ready (its queue delay's start)
  // When the audio delivered so far has played, by a real-time clock from each piece's delivery
  // (the due time of a mark).
  std::int64_t delivered_playout_ns = 0;
  bool retired = false;

  // --- events and payloads (worker -> reader) -------------------------------------------------
  SessionOutput output;

  // Stops every utterance spoken so far (queued ones never start, the one in progress stops before
  // its next chunk); `barge_in`: they end with kTtsInterrupted instead of kTtsCancelled. Any
  // thread; never waits for inference. Returns the last utterance stopped (0: none was spoken).
  std::uint32_t stop(bool barge_in);
  // Whether the session has work: an utterance queued or not ended yet.
  bool speaking() const noexcept;
  // The reader freed room of kind `freed` (kWaitEvents, kWaitPayload): wakes the worker if it waits
  // for that. The fence pairs with the worker's (SpeechAdapter::deliver): either it sees the room,
  // or this sees it waiting. Reader thread.
  void room_freed(std::uint8_t freed);
  double seconds(std::uint64_t samples) const noexcept { return static_cast<double>(samples) / sample_rate_hz; }
};

}  // namespace brisvox::engine
