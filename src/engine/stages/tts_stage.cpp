#include "engine/stages/tts_stage.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <limits>

#include "base/log.h"
#include "brisvox/error.h"
#include "engine/pool/pool_clock.h"

namespace brisvox::engine {
namespace {

std::uint16_t clamp16(std::size_t n) {
  return static_cast<std::uint16_t>(std::min<std::size_t>(n, std::numeric_limits<std::uint16_t>::max()));
}

Event speech_event(EventType type, std::uint32_t utterance, std::size_t sentence, std::size_t count) {
  Event ev;
  ev.type = type;
  ev.speech = SpeechPosition{utterance, clamp16(sentence), clamp16(count)};
  return ev;
}

// A session's Piper settings: the model's defaults (ModelSpec::options), then the session's own.
PiperRequest piper_request_for(const ModelSpec& spec, const std::map<std::string, double, std::less<>>& session) {
  PiperRequest r;
  auto set = [&](std::string_view name, double value) {
    if (name == "noise_scale") {
      r.noise_scale = static_cast<float>(value);
    } else if (name == "length_scale") {
      r.length_scale = static_cast<float>(value);
    } else if (name == "noise_w_scale") {
      r.noise_w_scale = static_cast<float>(value);
    } else if (name == "speaker_id") {
      if (value != std::floor(value) || value < 0 || value > (1 << 20)) {
        throw Error(ErrorCode::kInvalidArgument, fmt::format("speaker_id must be a whole number 0 to 1048576, got {}", value));
      }
      r.speaker_id = static_cast<int>(value);
    } else {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("voice '{}' (piper_tts) has no setting '{}': it takes noise_scale, length_scale, "
                              "noise_w_scale and speaker_id",
                              spec.name, name));
    }
  };
  for (const auto& [name, value] : spec.options) {
    if (name != "config") set(name, std::stod(value));  // numbers: ModelSpec::validate checked them
  }
  for (const auto& [name, value] : session) set(name, value);
  return r;
}

}  // namespace

TtsAdapter::TtsAdapter(PiperTts tts, int run_timeout_ms, TtsShared& shared)
    : tts_(std::move(tts)), run_timeout_ms_(run_timeout_ms), shared_(shared) {
  retired_.reserve(16);
}

// --- one step -----------------------------------------------------------------------------------

std::int64_t TtsAdapter::prepare(SpeechSlot& s, std::size_t /*row*/) {
  if (s.retired) return kNotStaged;
  if (s.close_requested.load(std::memory_order_acquire)) {
    retire(s);
    return kNotStaged;
  }
  if (shared_.stopping.load(std::memory_order_acquire)) {
    // The engine is going away: what was not synthesised is abandoned (~Engine, engine.h).
    s.current.reset();
    s.outbox.clear();
    return kNotStaged;
  }
  apply_cancel(s);
  while (true) {
    // Nothing new is synthesised while earlier outputs wait for the reader: that is the
    // back-pressure (at most one sentence's audio waits here, the rest in the channel).
    const bool was_waiting = !s.outbox.empty();
    if (!deliver(s)) {
      next_step(s, 0);  // the reader's next read queues it: the audio it waits for is due now
      return kNotStaged;
    }
    if (was_waiting) s.step_ready_ns = now_ns();  // ready from when the reader made room
    if (!s.current) {
      if (!begin_next(s)) {  // idle: the next speak() schedules the session
        next_step(s, 0);
        return kNotStaged;
      }
      continue;  // an utterance that ended at once (failed, or nothing to say): deliver, then the next
    }
    staged_ = &s;
    // A first sentence counts from speak(): its queue delay and latency include the phonemizing.
    // (PoolJob::ready_since_ns belongs to the pool's lock: speak() or a reader may queue the job
    // again while it is here.)
    return s.current->synthesis.sentences_done() == 0 ? s.current->utterance.submitted_ns : s.step_ready_ns;
  }
}

void TtsAdapter::run(int /*key*/, std::size_t /*rows*/) {
  SpeechSlot& s = *staged_;
  try {
    if (!tts_.next(s.current->synthesis, chunk_)) {
      throw Error(ErrorCode::kInternal, "a synthesis without a sentence left was staged");
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // The pool handles brisvox::Error only: anything else (out of memory) fails this run alone.
    throw Error(ErrorCode::kRuntime, e.what());
  }
}

bool TtsAdapter::complete(SpeechSlot& s, const Completion& c) {
  staged_ = nullptr;
  if (c.failure != nullptr) {
    const PiperSynthesis& syn = s.current->synthesis;
    // next() leaves the synthesis where it was when the run fails: sentences_done() is the one that failed.
    fail_utterance(s, s.current->utterance, syn.sentence_count(), c.failure->code,
                   fmt::format("utterance {} of speech session {} failed at sentence {} of {}: {}",
                               s.current->utterance.id, s.id, syn.sentences_done() + 1, syn.sentence_count(),
                               c.failure->why));
    s.current.reset();
  } else {
    const bool last = chunk_.last;
    const std::int64_t made_at = now_ns();
    const std::int64_t run_ns = made_at - c.run_start_ns;
    if (!chunk_.phoneme_ids.empty()) {
      const double per_id = static_cast<double>(run_ns) / static_cast<double>(chunk_.phoneme_ids.size());
      run_ns_per_id_ += 0.2 * (per_id - run_ns_per_id_);
    }
    // The longest recent run: what a continuation that becomes due may find in progress.
    longest_run_ns_ = std::max(run_ns, longest_run_ns_ - longest_run_ns_ / 8);
    if (chunk_.sentence_index == 0) s.first_audio_ns = made_at;
    queue_sentence(s, chunk_);
    if (last) {
      queue_terminal(s, EventType::kTtsEnd, s.current->utterance, s.current->synthesis.sentence_count());
      s.current.reset();
    }
  }
  // A cancel that came during the run discards the sentence it made (it is not delivered).
  apply_cancel(s);
  const bool more = deliver(s) && has_work(s);
  const std::int64_t now = now_ns();
  if (more) s.step_ready_ns = now;
  // The client plays what was made while the next chunk is synthesised: the next may wait behind
  // other sessions' first sentences for as long as that audio lasts, less its own run time.
  next_step(s, s.current.has_value() ? continuation_slack_ns(s, now) : 0);
  return more;
}

std::int64_t TtsAdapter::continuation_slack_ns(const SpeechSlot& s, std::int64_t now) const {
  const auto played_until = s.first_audio_ns + static_cast<std::int64_t>(s.seconds(s.utterance_samples) * 1e9);
  const auto next_run = static_cast<std::int64_t>(run_ns_per_id_ * static_cast<double>(s.current->synthesis.next_phoneme_ids()));
  return std::max<std::int64_t>(0, played_until - now - next_run - longest_run_ns_);
}

void TtsAdapter::next_step(SpeechSlot& s, std::int64_t defer_ns) {
  // Starting an utterance (its first sentence) goes before continuations: that is the time to
  // first audio a caller hears. A continuation waits at most defer_ns for them (PoolJob::defer_ns).
  const bool continues = s.current.has_value();
  s.key.store(continues ? kTtsContinueKey : kTtsStartKey, std::memory_order_relaxed);
  s.defer_ns = continues ? defer_ns : 0;
}

std::string TtsAdapter::describe_failure(const Error& e, bool timed_out, std::size_t /*rows*/,
                                         std::int64_t elapsed_ns) const {
  if (timed_out) {
    return fmt::format("the sentence's model run took longer than run_timeout_ms ({} ms) and was cancelled after {} ms; "
                       "a sentence costs about 2.2 ms of one core per phoneme id (1 s for 455 ids): raise "
                       "EngineConfig::run_timeout_ms, or end long sentences earlier with . ? or !",
                       run_timeout_ms_, elapsed_ns / 1'000'000);
  }
  return e.what();
}

// --- utterances -----------------------------------------------------------------------------------

bool TtsAdapter::begin_next(SpeechSlot& s) {
  Utterance u;
  {
    std::lock_guard lock(s.mu);
    if (s.to_speak.empty()) return false;
    u = std::move(s.to_speak.front());
    s.to_speak.pop_front();
  }
  if (u.id <= s.cancelled_upto.load(std::memory_order_acquire)) {
    queue_terminal(s, EventType::kTtsCancelled, u, 0);
    return true;
  }
  PiperRequest request = s.options;
  request.text = std::move(u.text);
  PiperSynthesis synthesis;
  try {
    // The text was checked by speak(); what can fail here is espeak-ng (kRuntime: it is started
    // again by the next request) or a sentence longer than one run (kInvalidArgument).
    synthesis = tts_.start(request);
  } catch (const Error& e) {
    fail_utterance(s, u, 0, e.code(), fmt::format("utterance {} of speech session {}: {}", u.id, s.id, e.what()));
    return true;
  } catch (const std::exception& e) {
    fail_utterance(s, u, 0, ErrorCode::kInternal,
                   fmt::format("utterance {} of speech session {}: {}", u.id, s.id, e.what()));
    return true;
  }
  if (synthesis.sentence_count() == 0) {  // nothing to say ("..."): done at once, as in Piper
    queue_terminal(s, EventType::kTtsEnd, u, 0);
    return true;
  }
  s.utterance_samples = 0;
  s.current.emplace(SpeechSlot::Current{std::move(u), std::move(synthesis), true});
  return true;
}

void TtsAdapter::queue_sentence(SpeechSlot& s, PiperChunk& chunk) {
  const std::uint32_t id = s.current->utterance.id;
  s.sentence_audio = std::move(chunk.samples);
  const std::size_t n = s.sentence_audio.size();
  std::size_t begin = 0;
  do {
    const std::size_t end = std::min(n, begin + s.piece_samples);
    PendingOutput p;
    p.event = speech_event(EventType::kTtsAudio, id, chunk.sentence_index, chunk.sentence_count);
    p.event.start_s = s.seconds(s.utterance_samples + begin);
    p.event.end_s = s.seconds(s.utterance_samples + end);
    p.audio_begin = begin;
    p.audio_end = end;
    p.last_piece = end == n;
    s.outbox.push_back(p);
    begin = end;
  } while (begin < n);
  s.utterance_samples += n;
}

Event TtsAdapter::terminal_event(const SpeechSlot& s, EventType type, std::uint32_t utterance, std::size_t count) {
  if (type == EventType::kTtsEnd) {
    Event ev = speech_event(type, utterance, count, count);
    ev.end_s = s.seconds(count == 0 ? 0 : s.utterance_samples);
    return ev;
  }
  // A cancel or an error: what of the utterance was delivered before it ended.
  const bool delivering = s.delivering_id == utterance;
  Event ev = speech_event(type, utterance, delivering ? s.delivered_sentences : 0, count);
  ev.end_s = s.seconds(delivering ? s.delivered_samples : 0);
  return ev;
}

void TtsAdapter::queue_terminal(SpeechSlot& s, EventType type, const Utterance& u, std::size_t count) {
  PendingOutput p;
  p.event = terminal_event(s, type, u.id, count);
  s.outbox.push_back(p);
}

void TtsAdapter::fail_utterance(SpeechSlot& s, const Utterance& u, std::size_t count, ErrorCode code,
                                const std::string& message) {
  detail::log(LogLevel::kWarn, "tts: {}", message);
  s.set_error(message);
  PendingOutput p;
  p.event = terminal_event(s, EventType::kError, u.id, count);
  p.event.error_code = code;
  s.outbox.push_back(p);
}

void TtsAdapter::apply_cancel(SpeechSlot& s) {
  const std::uint32_t upto = s.cancelled_upto.load(std::memory_order_acquire);
  if (upto <= s.cancel_applied) return;
  s.cancel_applied = upto;
  // Outputs of cancelled utterances not delivered yet: their audio and their end go, and a
  // kTtsCancelled takes the end's place. Terminal events already made (an error, a cancel) stay.
  std::deque<PendingOutput> kept;
  for (PendingOutput& p : s.outbox) {
    const SpeechPosition pos = p.event.speech;
    if (pos.utterance_id <= upto && p.event.type == EventType::kTtsAudio) continue;
    if (pos.utterance_id <= upto && p.event.type == EventType::kTtsEnd) {
      PendingOutput cancelled;
      cancelled.event = terminal_event(s, EventType::kTtsCancelled, pos.utterance_id, pos.sentence_count);
      kept.push_back(cancelled);
      continue;
    }
    kept.push_back(p);
  }
  s.outbox.swap(kept);
  if (s.current && s.current->utterance.id <= upto) {
    queue_terminal(s, EventType::kTtsCancelled, s.current->utterance, s.current->synthesis.sentence_count());
    s.current.reset();
  }
  std::lock_guard lock(s.mu);
  while (!s.to_speak.empty() && s.to_speak.front().id <= upto) {
    queue_terminal(s, EventType::kTtsCancelled, s.to_speak.front(), 0);
    s.to_speak.pop_front();
  }
}

bool TtsAdapter::has_work(SpeechSlot& s) {
  if (s.current) return true;
  std::lock_guard lock(s.mu);
  return !s.to_speak.empty();
}

// --- delivery -------------------------------------------------------------------------------------

bool TtsAdapter::deliver(SpeechSlot& s) {
  bool wrote = false;
  // Writes what fits; returns the kWait* reason it stopped for, 0 when the outbox is empty.
  auto write_outputs = [&]() -> std::uint8_t {
    while (!s.outbox.empty()) {
      PendingOutput& p = s.outbox.front();
      if (s.events.free_space() == 0) return kWaitEvents;
      if (p.event.type == EventType::kTtsAudio) {
        const auto piece = std::span<const float>(s.sentence_audio).subspan(p.audio_begin, p.audio_end - p.audio_begin);
        const auto bytes = std::as_bytes(piece);
        if (!s.payloads.write(s.next_payload_id, bytes)) return kWaitPayload;
        p.event.payload = PayloadStatus::kAttached;
        p.event.payload_bytes = static_cast<std::uint32_t>(bytes.size());
        p.event.payload_id = s.next_payload_id++;
        if (s.delivering_id != p.event.speech.utterance_id) {
          s.delivering_id = p.event.speech.utterance_id;
          s.delivered_samples = 0;
          s.delivered_sentences = 0;
        }
        s.delivered_samples += piece.size();
        if (p.last_piece) ++s.delivered_sentences;
      }
      s.events.write(std::span<const Event>(&p.event, 1));
      s.events_wake.published();
      s.outbox.pop_front();
      wrote = true;
    }
    return 0;
  };
  bool delivered_all = false;
  while (true) {
    const std::uint8_t blocked = write_outputs();
    if (blocked == 0) {
      s.waiting.store(0, std::memory_order_release);
      delivered_all = true;
      break;
    }
    // Still blocked after announcing what it waits for: the reader's next read wakes the job.
    if (s.waiting.load(std::memory_order_relaxed) == blocked) break;
    // Announce, then look again: the reader frees room first and looks at `waiting` after (both
    // sides fence), so room made before the announcement is seen by the second look, and room
    // made after it by the reader's look.
    s.waiting.store(blocked, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  if (wrote && s.config.on_events) s.config.on_events();
  return delivered_all;
}

// --- end of a session -----------------------------------------------------------------------------

void TtsAdapter::retire(SpeechSlot& s) {
  s.retired = true;
  s.current.reset();
  s.outbox.clear();
  {
    std::lock_guard lock(s.mu);
    s.to_speak.clear();
  }
  retired_.push_back(std::move(s.self));
  sessions_.fetch_sub(1, std::memory_order_relaxed);
  shared_.open_sessions.fetch_sub(1, std::memory_order_relaxed);
}

void TtsAdapter::after_batch() {
  for (std::size_t i = 0; i < retired_.size();) {
    // Not queued (no pointer to it in a ready queue) and the handle is gone.
    if (!retired_[i]->queued.load(std::memory_order_acquire) && retired_[i].use_count() == 1) {
      retired_[i] = std::move(retired_.back());
      retired_.pop_back();
    } else {
      ++i;
    }
  }
}

// --- the pool ---------------------------------------------------------------------------------------

TtsPool::TtsPool(const ModelSpec& spec)
    : ModelPool(spec),
      shared_(std::make_unique<TtsShared>()),
      pool_(spec, PoolShape{kTtsKeys, static_cast<std::size_t>(spec.max_pending)}, [&](int /*worker*/) {
        PiperTtsConfig c;
        c.model_path = spec.path;
        if (const auto it = spec.options.find("config"); it != spec.options.end()) c.config_path = it->second;
        c.max_batch = 1;
        c.session = spec.session;
        return TtsAdapter(PiperTts(c), spec.run_timeout_ms, *shared_);
      }) {}

std::shared_ptr<SpeechSlot> TtsPool::open(const SpeechConfig& config, std::uint64_t id) {
  if (shared_->draining.load(std::memory_order_acquire) || stopping()) {
    throw Error(ErrorCode::kClosed, "the engine is shutting down: no new speech sessions");
  }
  PiperRequest options = piper_request_for(spec(), config.voice_options);
  options.output_rate_hz = config.sample_rate_hz;
  options.volume = config.volume;
  options.fast_start = config.fast_start;
  check_piper_options(options, voice());
  const int most = spec().max_pending;
  if (shared_->open_sessions.fetch_add(1, std::memory_order_relaxed) >= most) {
    shared_->open_sessions.fetch_sub(1, std::memory_order_relaxed);
    throw Error(ErrorCode::kOverloaded,
                fmt::format("voice '{}' has {} speech sessions open, its limit (ModelSpec::max_pending): close one "
                            "first or raise the limit",
                            spec().name, most));
  }
  try {
    const int rate = config.sample_rate_hz == 0 ? voice().sample_rate_hz : config.sample_rate_hz;
    const auto payload_bytes = static_cast<std::size_t>(
        config.payload_buffer_bytes > 0 ? config.payload_buffer_bytes : kDefaultSpeechPayloadBytes);
    const int worker = pool_.least_loaded_worker();
    auto slot = std::make_shared<SpeechSlot>(id, config, *this, worker, rate, payload_bytes, options);
    slot->self = slot;
    pool_.adapter(worker).attach();
    return slot;
  } catch (...) {
    shared_->open_sessions.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
}

}  // namespace brisvox::engine
