// The stt stage: speech-to-text (Whisper) after the VAD, on the batch pool as a request model whose
// requests take several steps.
//
// When a stream's VAD ends a speech segment, its VAD worker copies the segment's audio (at most
// 30 s, at the stream's model rate) from the stream's history into a free request slot and submits
// it to the stt pool, pinned to the least loaded worker. A request then goes through the same
// worker's runs:
//   1. an encoder run (job key: the segment's window length, so that a batch holds one length):
//      the log-mel features, a decoder lane acquired, the encoder's output written into it;
//   2. decoder steps (job key kDecodeKey): every segment being decoded on the worker advances by
//      one token per step, in one run; a segment joins after its encoder run and leaves at
//      <|endoftext|> or the token limit (a fit window that ends at the limit goes back to step 1
//      in the full window). A segment decoded as several sequences (beam search, best-of
//      sampling: WhisperBeamSearch) holds that many decoder lanes, its encoder output in the first
//      and copied to the others when its hypotheses spread; a result that needs the temperature
//      fallback is decoded again at the next temperature on the same lanes, without a new encoder
//      run;
//   3. with word timestamps, the alignment pass (whisper_words.h): the kept attempt's tokens fed on
//      the first lane (the others given back), in the same decoder steps as the other segments;
//   4. the result into the stream's mailbox, the stream woken on its VAD worker, which alone emits
//      the kTranscript event (text and words as payload; the words placed there, in segment order,
//      since the pause rule looks back at the previous segment's last word) and then gives the
//      request slot back.
// A decoder step runs every busy lane of the worker, so every segment being decoded must be in
// each decode batch: they are (they are queued again together after each step, and the decoder
// has max_batch x max_width lanes), and run() checks it.
//
// A stream whose segment finds no free request slot holds its frames (its history must keep the
// segment's audio) until the pool gives a slot back and wakes it: nothing is dropped.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "brisvox/audio/resampler.h"
#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/events.h"
#include "brisvox/engine/transcript.h"
#include "brisvox/models/stt/whisper_beam.h"
#include "brisvox/models/stt/whisper_decoder.h"
#include "brisvox/models/stt/whisper_encoder.h"
#include "brisvox/models/stt/whisper_features.h"
#include "brisvox/models/stt/whisper_model.h"
#include "brisvox/models/stt/whisper_search.h"
#include "brisvox/models/stt/whisper_words.h"
#include "engine/pool/batch_pool.h"
#include "engine/pool/request_slots.h"
#include "engine/stream/audio_history.h"
#include "engine/stream/stage.h"

namespace brisvox::engine {

struct StreamState;
class SttPool;
struct SttRequest;

// The longest segment the stage transcribes: the model's window (the VAD's max_speech_s is capped
// to it, so longer speech is split at the VAD's own split points).
inline constexpr double kSttMaxSegmentS = 30.0;

// Job keys of a model whose full window has `full_frames` frames: one per encoder window length
// (the full one, then the fit lengths from the minimum up in steps of the granularity), and one
// for the decoder steps (the last).
int stt_num_keys(int full_frames) noexcept;

// The stt stage of one stream.
class SttStage final : public Stage {
 public:
  // Error(kInvalidArgument) for decoding options the model refuses.
  SttStage(const SttOptions& options, SttPool& stt_pool);

  // The longest segment's audio, with the segmenter's look-ahead.
  std::size_t history_samples(int model_rate_hz, int chunk_samples, const VadOptions& vad) const override;
  // Transcripts: a header and the text, a few hundred bytes each (a few KB with words); room for a
  // few dozen.
  std::size_t payload_bytes() const override { return options_.word_timestamps ? 64 * 1024 : 16 * 1024; }
  // Transcripts ready in the mailbox become events, in segment order; a deferred segment is
  // submitted when it can be.
  void collect(StreamState& s) override;
  // A speech segment ended: its transcription is submitted (or deferred, holding the stream). One
  // started: with partial transcripts, its decodes are scheduled from now on.
  void on_segment(StreamState& s, const SegmentEvent& e) override;
  // Partial transcripts: the open segment's audio so far decoded again when its interval is up.
  void on_frame(StreamState& s, float probability, std::int64_t frame_ready_ns) override;
  // The stream is being retired: what its requests still hold goes back to the pool.
  void close(StreamState& s) override;
  // A segment waits for a request slot: the stream holds its frames (the history must keep the
  // segment's audio), and its end waits before the VAD's last segments (only one may wait).
  bool holds_frames() const override { return deferred_; }
  bool defers_end() const override { return deferred_; }
  // A transcript is pending or a segment waits: the stream's end must wait for them.
  bool busy() const override { return deferred_ || in_flight_.load(std::memory_order_acquire) > 0; }

  const SttOptions& options() const noexcept { return options_; }
  // The decoding of each attempt (one per fallback temperature; the first is the search).
  const WhisperSearch& search(std::size_t attempt = 0) const noexcept { return searches_[attempt]; }
  // Partial transcripts' decoding: the search's, greedy, without the fallback.
  const WhisperSearch& partial_search() const noexcept { return *partial_search_; }
  // The open segment's agreed tokens, which its next partial decode is forced to begin with (the
  // stream's VAD worker).
  std::span<const int> agreed() const noexcept { return agreed_; }
  std::size_t attempts() const noexcept { return searches_.size(); }
  // Decoder lanes a segment holds: the widest attempt's sequences.
  int width() const noexcept { return width_; }
  // kFirst detection (the stt worker's side): a new segment takes the stream's language once one
  // was detected; the first detection is kept. Any thread.
  void adopt_language(WhisperBeamSearch& search) const noexcept;
  void note_language(const WhisperBeamSearch& search) noexcept;
  // The stt worker's side (SttAdapter): a request's result is ready. False when the stream was
  // retired meanwhile (nobody reads it: the caller gives the slot back).
  bool deliver(SttRequest& r);

 private:
  bool try_submit(StreamState& s, std::int64_t start_sample, std::int64_t end_sample, bool partial = false);
  void emit(StreamState& s, SttRequest& r);
  // The open segment's next partial decode, when its interval is up and none is in flight.
  void ask_partial(StreamState& s);
  // A partial decode's result: the agreement with the previous one, a kTranscriptPartial.
  void emit_partial(StreamState& s, SttRequest& r);
  // r.transcript as the payload of a `type` event over r's span.
  void emit_payload(StreamState& s, const SttRequest& r, EventType type);
  void release(SttRequest& r);  // the request's transcript is out: its slot back

  SttPool* const pool_;
  const SttOptions options_;
  std::vector<WhisperSearch> searches_;  // the stream's decoding options, shared by its requests
  std::optional<WhisperSearch> partial_search_;
  int width_ = 1;
  // VAD worker only.
  std::uint64_t next_seq_ = 0;        // number of the next segment submitted
  std::uint64_t next_emit_ = 0;       // number of the next transcript to emit (they come in order)
  bool deferred_ = false;             // a segment waits for a free request slot
  friend class SttPool;
  bool waits_for_slot_ = false;       // in the pool's waiters (the pool's waiting_mu_)
  std::int64_t deferred_start_ = 0;   // its span, model-rate samples
  std::int64_t deferred_end_ = 0;
  std::atomic<int> in_flight_{0};     // requests submitted and not yet emitted
  // kFirst detection: the stream's language token (-1 until detected) and its probability, the
  // token published after the probability.
  std::atomic<int> language_token_{-1};
  std::atomic<float> language_probability_{0.0f};
  // VAD worker only: the end of the last word emitted (word timestamps' pause rule), and the
  // payload being written.
  double last_speech_s_ = 0.0;
  std::vector<std::byte> payload_;
  // Partial transcripts (VAD worker only): the open segment (its number, start, the stream's
  // samples when its last decode was asked), the decode in flight, the tokens agreed on so far
  // and the previous decode's.
  bool in_speech_ = false;
  std::uint64_t speech_segment_ = 0;
  std::int64_t speech_start_ = 0;
  std::int64_t last_partial_ = 0;
  bool partial_in_flight_ = false;
  std::vector<int> agreed_;
  std::vector<int> previous_;
  // Mailbox: requests whose result is ready (their worker), taken by the VAD worker.
  std::mutex mu_;
  std::vector<SttRequest*> done_;  // capacity: the pool's request slots (mu_)
  bool closed_ = false;            // the stream was retired: results go straight back (mu_)
};

// One segment to transcribe, in a slot of the stt pool.
struct SttRequest : PoolJob {
  std::shared_ptr<StreamState> stream;  // held until its transcript is emitted
  SttStage* stage = nullptr;            // the stream's, kept alive by `stream`
  std::uint64_t seq = 0;               // the stream's segment number (a partial: its speech segment's)
  bool partial = false;                // a partial transcript's decode of an open segment
  double start_s = 0;                  // the segment, in stream seconds
  double end_s = 0;
  int sample_rate_hz = 16000;          // of `audio` (the stream's model rate)
  std::vector<float> audio;            // capacity: 30 s at 16 kHz
  std::size_t num_samples = 0;
  int window_frames = 0;               // the encoder window it is (to be) encoded in
  std::vector<int> lanes;              // its decoder lanes while encoded (capacity: max_width)
  std::optional<WhisperBeamSearch> search;  // its decoding, while in the decoder
  std::size_t attempt = 0;             // the fallback temperature being decoded at
  std::vector<WhisperAttempt> attempts;  // what the earlier temperatures gave
  std::vector<Transcript> results;     // and their transcripts
  std::vector<std::vector<int>> result_tokens;  // and their tokens (for word timestamps)
  std::optional<WhisperAligner> aligner;  // the word-timestamp pass, after the decoding
  std::vector<WhisperWordTiming> timings;  // its words, within the segment
  std::vector<int> tokens;             // the kept attempt's tokens (partials, word timestamps)
  std::vector<int> prefix;             // a partial decode's forced start: the agreed tokens
  // The result, for the stream's VAD worker.
  Transcript transcript;
  bool failed = false;
  ErrorCode error_code = ErrorCode::kRuntime;
  std::string error;
};

// A stt worker's sessions and scratch.
class SttAdapter {
 public:
  using Job = SttRequest;
  SttAdapter(const WhisperModel& model, const ModelSpec& spec, SttPool& pool);

  // The job key of the decoder steps; encoder runs use key_of_window(frames) below it.
  int decode_key() const noexcept { return decode_key_; }
  int key_of_window(int frames) const noexcept;
  int max_positions() const { return decoder_.max_tokens(); }
  int max_width() const noexcept { return max_width_; }
  int alignment_heads() const { return decoder_.alignment_heads(); }

  std::int64_t prepare(SttRequest& r, std::size_t row);
  void run(int key, std::size_t rows);
  bool complete(SttRequest& r, const Completion& c);
  void after_batch() {}
  void cancel_run() noexcept;
  void clear_cancel() noexcept;
  std::string describe_failure(const Error& e, bool timed_out, std::size_t rows, std::int64_t elapsed_ns) const;
  std::size_t load() const noexcept { return load_.load(std::memory_order_relaxed); }
  void add_load() noexcept { load_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::int64_t prepare_encode(SttRequest& r, std::size_t row);
  void finish(SttRequest& r);  // the result to the stream, the decoder lanes and the load back
  // The segment's decoding ended: the next temperature, or the transcript. True to decode on.
  bool conclude_attempt(SttRequest& r);
  // The word-timestamp pass of the kept attempt's `tokens`. True to decode on.
  bool start_alignment(SttRequest& r, std::span<const int> tokens, int language);
  void release_lanes(SttRequest& r);

  const WhisperModel* model_;
  SttPool* pool_;
  int run_timeout_ms_;
  WhisperFeatures features_;
  WhisperEncoder encoder_;
  WhisperDecoder decoder_;
  Resampler upsampler_{8000, 16000, 8192};
  int full_frames_;
  int fit_min_frames_;
  int fit_granularity_;
  int decode_key_;
  int max_width_;
  std::size_t batch_lanes_ = 0;             // lanes of the decode batch being prepared
  std::vector<std::span<float>> logits_;    // [max_width], a segment's live sequences
  std::vector<float> audio16k_;              // a segment at 16 kHz
  std::vector<float> mels_;                  // [max_batch, 80, full_frames]
  std::vector<const float*> mel_ptrs_;
  std::vector<WhisperEncoderOutput> outputs_;
  std::vector<int> tokens_;                  // [max_lanes], one per decoder lane
  std::vector<SttRequest*> rows_;            // the batch being run
  int frames_ = 0;                           // window of the encoder batch being run
  bool decoding_ = false;                    // the batch being run is a decoder step
  std::atomic<std::size_t> load_{0};
};

class SttPool final : public ModelPool {
 public:
  // `spec` resolved. Loads the model folder and every worker's sessions (Error kIo, kBadModel,
  // kModelMismatch naming the tensor).
  explicit SttPool(const ModelSpec& spec);

  const WhisperModel& model() const noexcept { return *model_; }
  std::size_t capacity() const noexcept { return slots_->capacity(); }
  // Positions a decoder lane holds: a stream's decoding options must fit (search.max_positions()).
  int max_positions() const noexcept { return max_positions_; }
  // Sequences a segment may be decoded as (the model's "max_width" option): beam_size, best_of.
  int max_width() const noexcept { return max_width_; }
  // The decoder's alignment heads (0: no word timestamps).
  int alignment_heads() const noexcept { return alignment_heads_; }

  // VAD worker: queues the transcription of `audio` (model-rate samples of the segment
  // [start_s, end_s)) for `stage` of `stream`. False when every request slot is in use: the stream
  // is then woken when one is free (schedule on its VAD pool) and must hold its frames until then.
  // A partial decode (`partial`) takes a slot only while more than half are free (the rest are
  // kept for final transcripts); one that finds none is not queued: the stream neither waits nor
  // is woken for it.
  bool submit(StreamState& stream, SttStage& stage, std::uint64_t seq, double start_s, double end_s,
              const AudioHistory::Range& audio, bool partial = false);
  // The stream's VAD worker, after it emitted the request's transcript: the slot back, and a
  // waiting stream woken.
  void release(SttRequest* r);

  void start() override { pool_.start(); }
  void stop() override;
  void watch_runs(RunWatchdog& watchdog) override { pool_.watch_runs(watchdog); }
  ModelStats stats() const override { return pool_.stats(); }
  double recent_p99_queue_delay_us(std::int64_t now) const override { return pool_.recent_p99_queue_delay_us(now); }
  int num_workers() const noexcept override { return pool_.num_workers(); }

  // The pool's own view, for its adapters: a request to run again (another window).
  void schedule(SttRequest* r) { pool_.schedule(r); }

 private:
  std::unique_ptr<WhisperModel> model_;  // before the pool: its adapters use it
  std::unique_ptr<RequestSlots<SttRequest>> slots_;
  int max_positions_ = 0;
  int max_width_ = 1;
  int alignment_heads_ = 0;
  // Streams holding a segment for a slot, each once (SttStage::waits_for_slot_, under the lock).
  // A slot given back wakes them all: one woken stream may no longer want it (it closed, or
  // another slot came first), and waking only it would leave the others asleep beside a free slot.
  std::mutex waiting_mu_;
  std::vector<std::pair<std::shared_ptr<StreamState>, SttStage*>> waiting_;
  BatchPool<SttAdapter> pool_;
};

}  // namespace brisvox::engine
