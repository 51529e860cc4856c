#include "engine/stream/vad_pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "brisvox/error.h"
#include "engine/stream/input_tally.h"

namespace brisvox::engine {
namespace {

constexpr std::size_t kMaxFrameSamples = 512;  // Silero's frame at 16 kHz (256 at 8 kHz)

int rate_of_key(int key) noexcept { return key == 0 ? 16000 : 8000; }

}  // namespace

VadAdapter::VadAdapter(SileroVad vad, int max_batch, int run_timeout_ms, EngineShared& shared)
    : vad_(std::move(vad)), run_timeout_ms_(run_timeout_ms), shared_(shared) {
  const auto b = static_cast<std::size_t>(max_batch);
  batch_states_.resize(b);
  batch_chunks_.resize(b);
  staging_.resize(b * kMaxFrameSamples);
  probs_.resize(b);
  consumed_.resize(b);
  final_.resize(b);
}

std::int64_t VadAdapter::prepare(StreamState& s, std::size_t row) {
  const std::int64_t ready_ns = stage_frame(s, row);
  // A stage's result (a verdict, a transcript), an overload report, the end of a flushed stream:
  // events written here without a frame to run are announced now, not with the stream's next
  // frame (up to a frame later, or never for a stream that has no more audio).
  if (ready_ns == kNotStaged) s.output.announce();
  return ready_ns;
}

std::int64_t VadAdapter::stage_frame(StreamState& s, std::size_t row) {
  if (s.retired.load(std::memory_order_relaxed)) return kNotStaged;
  if (s.close_requested.load(std::memory_order_acquire)) {
    // A stage's request in flight still refers to the stream: its delivery schedules it again.
    if (!s.stages_pin()) retire(s);
    return kNotStaged;
  }
  for (const auto& stage : s.stages) stage->collect(s);
  // A stage may hold the stream's frames: offline streams wait for their turn verdict before more
  // audio is analysed, and a segment that waits for a transcription slot keeps its audio in the
  // history. Their results' delivery schedules the stream again.
  const bool hold = s.stages_hold_frames();
  if (!s.stages.empty() && s.segments_flushed && !s.finished) finish_stream(s);  // it waited for them
  if (hold && !s.finished) return kNotStaged;
  if (s.finished) return kNotStaged;
  // The flush flag first: it is set after the last samples were written, so once it is seen
  // set, size() includes every sample the stream will ever have.
  const bool flushing = s.flush_requested.load(std::memory_order_acquire);
  const std::size_t available = s.samples.size();
  const auto chunk = static_cast<std::size_t>(s.chunk_samples);
  float* frame = staging_.data() + row * kMaxFrameSamples;
  std::int64_t ready_ns;
  if (available >= chunk) {
    s.samples.peek(std::span(frame, chunk));
    consumed_[row] = chunk;
    final_[row] = flushing && available == chunk;
    ready_ns = s.frame_complete_ns[static_cast<std::size_t>(s.frames_done) & s.frame_time_mask];
  } else if (flushing && available > 0) {
    // The last partial frame, zero-padded as get_speech_timestamps does.
    s.samples.peek(std::span(frame, available));
    std::fill(frame + available, frame + chunk, 0.0f);
    consumed_[row] = available;
    final_[row] = 1;
    ready_ns = s.flush_ns;
  } else {
    // Queued for a flush, for refused samples to report, or woken early.
    if (s.refusal_episodes.load(std::memory_order_relaxed) != s.episodes_reported) {
      overload_check(s, 0);
    }
    if (flushing) finish_stream(s);
    return kNotStaged;
  }
  batch_states_[row] = &s.vad_state;
  batch_chunks_[row] = frame;
  return ready_ns;
}

void VadAdapter::run(int key, std::size_t rows) {
  vad_.run(rate_of_key(key), std::span(batch_states_.data(), rows), std::span(batch_chunks_.data(), rows),
           std::span(probs_.data(), rows));
}

std::string VadAdapter::describe_failure(const Error& e, bool timed_out, std::size_t rows,
                                         std::int64_t elapsed_ns) const {
  // ONNX Runtime's own message for a cancelled Run ("terminate flag") tells the user nothing.
  if (!timed_out) return e.what();
  return fmt::format("the model run of {} stream(s) took longer than run_timeout_ms ({} ms) and was cancelled after {} "
                     "ms; the frame counts as silence and the stream goes on. If this repeats, the machine is "
                     "overloaded or the model too slow: open fewer streams per worker, lower the VAD model's "
                     "max_batch or raise EngineConfig::run_timeout_ms",
                     rows, run_timeout_ms_, elapsed_ns / 1'000'000);
}

bool VadAdapter::complete(StreamState& s, const Completion& c) {
  const std::size_t row = c.row;
  const bool ok = c.failure == nullptr;
  if (!ok) fail_frame(s, row, *c.failure);
  s.samples.consume(consumed_[row]);
  (ok ? s.model_analysed : s.model_failed) += consumed_[row];
  const std::int64_t frame = s.frames_done++;
  if (s.config.vad.emit_probabilities && ok) {
    Event ev;
    ev.type = EventType::kVadProbability;
    ev.probability = probs_[row];
    ev.frame_index = frame;
    ev.start_s = s.seconds(frame * s.chunk_samples);
    ev.end_s = s.seconds((frame + 1) * s.chunk_samples);
    s.output.emit(ev);
  }
  // The history first: a segment that ends with this frame, or an analysis it asks for, needs it.
  if (s.history) s.history->append(batch_chunks_[row], consumed_[row]);
  for (const SegmentEvent& e : s.segmenter.push(probs_[row])) segment_event(s, e);
  for (const auto& stage : s.stages) stage->on_frame(s, probs_[row], c.ready_ns);
  overload_check(s, c.run_start_ns - c.ready_ns);
  if (final_[row]) finish_stream(s);
  s.output.notify();  // every frame, events or not: a reader waiting for buffer space learns of it
  return !s.finished && !s.stages_hold_frames() &&
         (s.samples.size() >= static_cast<std::size_t>(s.chunk_samples) ||
          s.flush_requested.load(std::memory_order_acquire));
}

void VadAdapter::fail_frame(StreamState& s, std::size_t row, const RunFailure& failure) {
  s.output.set_error(fmt::format("frame {} of stream {} was not analysed: {}", s.frames_done, s.id, failure.why));
  Event ev;
  ev.type = EventType::kError;
  ev.error_code = failure.code;
  ev.frame_index = s.frames_done;
  ev.start_s = s.seconds(s.frames_done * s.chunk_samples);
  ev.end_s = s.seconds(s.frames_done * s.chunk_samples + static_cast<std::int64_t>(consumed_[row]));
  s.output.emit(ev);
  // The segmenter needs a probability per frame to keep its sample clock: the frame counts as
  // silence, and the error event says so.
  probs_[row] = 0.0f;
}

void VadAdapter::segment_event(StreamState& s, const SegmentEvent& e) {
  for (const auto& stage : s.stages) stage->on_segment(s, e);
  Event out;
  out.type = e.kind == SegmentEvent::Kind::kSpeechStart ? EventType::kSpeechStart : EventType::kSpeechEnd;
  out.start_s = s.seconds(e.start_sample);
  out.end_s = e.kind == SegmentEvent::Kind::kSpeechEnd ? s.seconds(e.end_sample) : 0.0;
  if (out.type != EventType::kSpeechEnd || !s.config.vad.segment_audio) {
    s.output.emit(out);
    return;
  }
  // At most the segment's last max_segment_audio_s (the history holds that, plus what the
  // segmenter looks ahead), so the payload always fits an empty channel.
  const std::int64_t begin = std::max(e.start_sample, e.end_sample - s.max_segment_samples);
  const AudioHistory::Range audio = s.history->range(begin, e.end_sample);
  s.output.emit_with_payload(out, std::as_bytes(audio.first), std::as_bytes(audio.second), audio.begin > e.start_sample);
}

void VadAdapter::finish_stream(StreamState& s) {
  if (s.finished) return;
  // A stage may need to go before the VAD's last segments (a segment waiting for a transcription
  // slot: the flush may end another one, and only one may wait). Its progress wakes the stream,
  // which comes back here.
  if (s.stages_defer_end()) return;
  const auto total = static_cast<std::int64_t>(s.samples.written());
  if (!s.segments_flushed) {
    const std::int64_t end = s.input_end(total);
    for (SegmentEvent e : s.segmenter.flush(total)) {
      e.start_sample = std::min(e.start_sample, end);
      e.end_sample = std::min(e.end_sample, end);
      segment_event(s, e);
    }
    s.segments_flushed = true;
  }
  for (const auto& stage : s.stages) stage->on_end(s);
  // The end of the stream waits for the stages' last results (a verdict, transcripts); their
  // delivery calls this again.
  if (s.stages_busy()) return;
  Event eos;
  eos.type = EventType::kEndOfStream;
  eos.end_s = s.seconds(total);
  s.output.emit(eos);
  s.finished = true;
  s.finished_flag.store(true, std::memory_order_release);
  // Announced by the caller (prepare() or complete()).
}

void VadAdapter::retire(StreamState& s) {
  // Only this worker removes its streams, so the stream cannot leave the registry in between.
  if (!shared_.streams.contains(s)) return;
  for (const auto& stage : s.stages) stage->close(s);
  // The stream's last figures: its handle is gone (close_requested was seen with acquire), so
  // neither the producer nor the reader changes them any more.
  const InputTally t = tally_input(s.input_accepted, s.model_analysed, s.model_failed, s.config.sample_rate_hz,
                                   s.model_rate_hz, s.finished && !s.flush_tail_refused);
  // Moved into the engine's totals in the same step as the stream leaves the registry: a reader of
  // Engine::stats() between the two saw the stream gone and its samples nowhere (a server's
  // ledger of received = processed + rejected came out unbalanced under TSan).
  std::shared_ptr<StreamState> owner = shared_.streams.remove(s, [&] {
    StreamTotals& totals = shared_.totals;
    totals.samples_analysed.fetch_add(t.analysed, std::memory_order_relaxed);
    totals.samples_failed.fetch_add(t.failed, std::memory_order_relaxed);
    totals.samples_discarded.fetch_add(t.discarded, std::memory_order_relaxed);
    totals.samples_rejected.fetch_add(s.samples_rejected.load(), std::memory_order_relaxed);
    totals.events_dropped.fetch_add(s.output.events_dropped(), std::memory_order_relaxed);
    totals.payloads_dropped.fetch_add(s.output.payloads_dropped(), std::memory_order_relaxed);
    totals.payloads_unread.fetch_add(s.output.payloads_unread() + s.output.payloads_waiting(),
                                     std::memory_order_relaxed);
  });
  s.retired.store(true, std::memory_order_relaxed);
  retired_.add(std::move(owner));
  num_streams_.fetch_sub(1, std::memory_order_relaxed);
}

void VadAdapter::after_batch() { retired_.free_unreferenced(); }

void VadAdapter::overload_check(StreamState& s, std::int64_t queue_delay_ns) {
  const std::int64_t budget_ns = std::int64_t{shared_.latency_budget_ms} * 1'000'000;
  const std::uint64_t rejected = s.samples_rejected.load(std::memory_order_relaxed);
  const std::uint32_t episodes = s.refusal_episodes.load(std::memory_order_relaxed);
  const bool late = queue_delay_ns > budget_ns;
  if ((late && !s.overloaded) || episodes != s.episodes_reported) {
    Event ev;
    ev.type = EventType::kOverload;
    ev.backlog_ms = static_cast<std::uint32_t>(std::max<std::int64_t>(0, queue_delay_ns) / 1'000'000);
    ev.rejected_samples = static_cast<std::uint32_t>(std::min<std::uint64_t>(rejected, UINT32_MAX));
    ev.start_s = s.seconds(s.frames_done * s.chunk_samples);
    s.output.emit(ev);
    s.episodes_reported = episodes;
    shared_.totals.overload_events.fetch_add(1, std::memory_order_relaxed);
  }
  // One event per episode: the episode ends when the delay is back under half the budget.
  if (late) s.overloaded = true;
  else if (queue_delay_ns < budget_ns / 2) s.overloaded = false;
}

VadPool::VadPool(const ModelSpec& spec, std::size_t max_streams, EngineShared& shared)
    : BatchPool(spec, PoolShape{kNumVadRateKeys, max_streams}, [&](int /*worker*/) {
        SileroConfig sc;
        sc.model_path = spec.path;
        sc.max_batch = spec.max_batch;
        sc.session = spec.session;
        return VadAdapter(SileroVad(sc), spec.max_batch, spec.run_timeout_ms, shared);
      }) {}

}  // namespace brisvox::engine
