#include "engine/stages/stt_stage.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/log.h"
#include "brisvox/error.h"
#include "engine/output/transcript_payload.h"
#include "engine/stream/stream_state.h"
#include "engine/stream/vad_pool.h"

namespace brisvox::engine {
namespace {

constexpr std::size_t kMaxSegmentSamples16k = static_cast<std::size_t>(kSttMaxSegmentS * 16000);

int fit_min_frames(int full_frames) noexcept { return std::min(WhisperFeatures::kDefaultFitMinFrames, full_frames); }

// A whole-number option of the model (validated by ModelSpec::validate), `otherwise` when not given.
int option_of(const ModelSpec& spec, std::string_view name, int otherwise) {
  const auto it = spec.options.find(name);
  return it == spec.options.end() ? otherwise : std::stoi(it->second);
}

int max_width_of(const ModelSpec& spec) { return option_of(spec, "max_width", 1); }

// Positions a decoder lane holds: the default (the longest prompt without context and 224 sampled
// tokens), plus <|startofprev|> and the prompt tokens the model's option allows.
int max_tokens_of(const ModelSpec& spec, const WhisperModel& model) {
  const int prompt = option_of(spec, "prompt_tokens", 0);
  const int n_ctx = model.config().dims.n_text_ctx;
  return prompt == 0 ? 0 : std::min(n_ctx, 5 + n_ctx / 2 + 1 + prompt);
}

}  // namespace

int stt_num_keys(int full_frames) noexcept {
  const int granularity = WhisperFeatures::kDefaultFitGranularityFrames;
  return 2 + (full_frames - fit_min_frames(full_frames) + granularity - 1) / granularity;
}

SttStage::SttStage(const SttOptions& options, SttPool& stt_pool) : pool_(&stt_pool), options_(options) {
  for (const WhisperDecodeOptions& d : options.fallback.attempts(options.decode)) {
    searches_.emplace_back(stt_pool.model().config(), d, &stt_pool.model().vocabulary());
  }
  width_ = options.fallback.max_width(options.decode);
  if (options.partial_interval_ms > 0) {
    WhisperDecodeOptions greedy = options.decode;
    greedy.beam_size = 1;
    greedy.best_of = 1;
    greedy.temperature = 0.0f;
    partial_search_.emplace(stt_pool.model().config(), greedy, &stt_pool.model().vocabulary());
  }
  if (options.word_timestamps && stt_pool.alignment_heads() == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("word timestamps need a Whisper decoder with alignment heads; model '{}' has none (convert "
                            "it again with tools/whisper/convert_ct2.py, brisvox layout)",
                            stt_pool.model().folder()));
  }
  if (width_ > stt_pool.max_width()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("the stt stage decodes a segment as {} sequences (beam_size {}, best_of {}), the model's "
                            "decoder gives a segment at most {} lanes: raise its option max_width",
                            width_, options.decode.beam_size, options.decode.best_of, stt_pool.max_width()));
  }
  done_.reserve(stt_pool.capacity());
}

std::size_t SttStage::history_samples(int model_rate_hz, int chunk_samples, const VadOptions& vad) const {
  return segment_history_samples(vad, kSttMaxSegmentS, model_rate_hz, chunk_samples);
}

// --- the pool's side ---------------------------------------------------------------------------

SttAdapter::SttAdapter(const WhisperModel& model, const ModelSpec& spec, SttPool& pool)
    : model_(&model),
      pool_(&pool),
      run_timeout_ms_(spec.run_timeout_ms),
      features_(model.config().dims.full_frames()),
      encoder_(model, WhisperEncoderConfig{spec.max_batch, WhisperFeatures::kDefaultFitGranularityFrames, spec.session}),
      decoder_(model, WhisperDecoderConfig{spec.max_batch * max_width_of(spec), max_tokens_of(spec, model), 0, spec.session}),
      full_frames_(model.config().dims.full_frames()),
      fit_min_frames_(fit_min_frames(full_frames_)),
      fit_granularity_(WhisperFeatures::kDefaultFitGranularityFrames),
      decode_key_(stt_num_keys(full_frames_) - 1),
      max_width_(max_width_of(spec)) {
  logits_.resize(static_cast<std::size_t>(max_width_));
  const auto b = static_cast<std::size_t>(spec.max_batch);
  audio16k_.assign(kMaxSegmentSamples16k + 8192, 0.0f);
  mels_.assign(b * WhisperFeatures::kMels * static_cast<std::size_t>(full_frames_), 0.0f);
  mel_ptrs_.resize(b);
  outputs_.resize(b);
  tokens_.assign(static_cast<std::size_t>(decoder_.max_lanes()), 0);
  rows_.resize(b);
}

int SttAdapter::key_of_window(int frames) const noexcept {
  if (frames >= full_frames_) return 0;
  return 1 + (frames - fit_min_frames_) / fit_granularity_;
}

std::int64_t SttAdapter::prepare(SttRequest& r, std::size_t row) {
  rows_[row] = &r;
  if (r.key == decode_key_) {
    decoding_ = true;
    if (row == 0) batch_lanes_ = 0;
    if (r.aligner) {
      tokens_[static_cast<std::size_t>(r.lanes.front())] = r.aligner->next_token();
      batch_lanes_ += r.lanes.size();
      return r.ready_since_ns;
    }
    const WhisperBeamSearch& search = *r.search;
    for (std::size_t k = 0; k < r.lanes.size(); ++k) {
      // Lanes without a live sequence yet (the prompt is decoded in the first) feed any token.
      tokens_[static_cast<std::size_t>(r.lanes[k])] =
          static_cast<int>(k) < search.width() ? search.next_token(static_cast<int>(k)) : model_->config().tokens.eot;
    }
    batch_lanes_ += r.lanes.size();
    return r.ready_since_ns;
  }
  decoding_ = false;
  try {
    return prepare_encode(r, row);
  } catch (const Error& e) {
    // The pool must not see an exception here: this segment fails alone, the batch goes on.
    r.failed = true;
    r.error_code = e.code();
    r.error = e.what();
    finish(r);
    return kNotStaged;
  }
}

std::int64_t SttAdapter::prepare_encode(SttRequest& r, std::size_t row) {
  std::span<const float> audio(r.audio.data(), r.num_samples);
  if (r.sample_rate_hz != WhisperFeatures::kSampleRateHz) {
    // Whisper listens at 16 kHz: 8 kHz streams are upsampled here, per segment.
    upsampler_.reset();
    std::size_t produced = upsampler_.process(audio, audio16k_);
    while (true) {
      const std::size_t more = upsampler_.flush(std::span(audio16k_).subspan(produced));
      if (more == 0) break;
      produced += more;
    }
    audio = std::span<const float>(audio16k_.data(), std::min(produced, kMaxSegmentSamples16k));
  }
  float* mel = mels_.data() + row * WhisperFeatures::kMels * static_cast<std::size_t>(full_frames_);
  const int frames = features_.compute(
      audio, r.window_frames == full_frames_ ? WhisperWindow::kFull : WhisperWindow::kFit,
      std::span(mel, WhisperFeatures::kMels * static_cast<std::size_t>(full_frames_)));
  if (frames != r.window_frames) {
    throw Error(ErrorCode::kInternal, fmt::format("segment window {} frames, expected {}", frames, r.window_frames));
  }
  const int width = r.partial ? 1 : r.stage->width();
  r.lanes.clear();
  for (int k = 0; k < width; ++k) {
    const int lane = decoder_.acquire();
    if (lane < 0) {
      release_lanes(r);
      throw Error(ErrorCode::kInternal,
                  "no free decoder lane (the pool pins at most max_batch segments per worker, max_width lanes each)");
    }
    r.lanes.push_back(lane);
    const WhisperEncoderOutput target = decoder_.begin(lane, WhisperEncoder::positions(frames));
    if (k == 0) outputs_[row] = target;
  }
  mel_ptrs_[row] = mel;
  frames_ = frames;
  return r.ready_since_ns;
}

void SttAdapter::run(int key, std::size_t rows) {
  if (key == decode_key_) {
    // A step advances every busy lane: each must be a row's of this batch (see the header).
    if (static_cast<int>(batch_lanes_) != decoder_.busy_count()) {
      throw Error(ErrorCode::kInternal, fmt::format("decoder step of {} segments ({} lanes) with {} lanes busy", rows,
                                                    batch_lanes_, decoder_.busy_count()));
    }
    decoder_.step(tokens_);
    return;
  }
  encoder_.run(frames_, std::span(mel_ptrs_.data(), rows), std::span(outputs_.data(), rows));
}

void SttAdapter::cancel_run() noexcept {
  encoder_.cancel_run();
  decoder_.cancel_run();
}

void SttAdapter::clear_cancel() noexcept {
  encoder_.clear_cancel();
  decoder_.clear_cancel();
}

std::string SttAdapter::describe_failure(const Error& e, bool timed_out, std::size_t rows,
                                         std::int64_t elapsed_ns) const {
  const char* what = decoding_ ? "decoder step" : "encoder run";
  if (timed_out) {
    return fmt::format("the Whisper {} of {} segment(s) took longer than run_timeout_ms ({} ms) and was cancelled "
                       "after {} ms; those segments get an error instead of a transcript (raise the stt model's "
                       "run_timeout_ms, or lower its max_batch, if this repeats)",
                       what, rows, run_timeout_ms_, elapsed_ns / 1'000'000);
  }
  return fmt::format("the Whisper {} of {} segment(s) failed: {}", what, rows, e.what());
}

bool SttAdapter::complete(SttRequest& r, const Completion& c) {
  if (c.failure != nullptr) {
    r.failed = true;
    r.error_code = c.failure->code;
    r.error = std::string(c.failure->why);
    finish(r);
    return false;
  }
  if (r.key != decode_key_) {  // encoded: decode from the next step on
    r.attempt = 0;
    r.attempts.clear();
    r.results.clear();
    r.result_tokens.clear();
    r.aligner.reset();
    r.timings.clear();
    r.tokens.clear();
    r.search.emplace(r.partial ? r.stage->partial_search() : r.stage->search());
    // A partial decode continues from what the earlier ones agreed on, so that the agreement grows
    // past an early word they would decode differently now.
    if (r.partial) r.search->force(r.prefix);
    r.stage->adopt_language(*r.search);
    r.key = decode_key_;
    return true;
  }
  if (r.aligner) {
    const int lane = r.lanes.front();
    r.aligner->consume(decoder_.logits(lane), decoder_.alignment(lane), decoder_.max_audio_positions());
    if (!r.aligner->done()) return true;
    r.timings = whisper_word_timings(model_->vocabulary(), model_->config().tokens.eot, r.transcript.language,
                                     *r.aligner);
    r.aligner.reset();
    finish(r);
    return false;
  }
  WhisperBeamSearch& search = *r.search;
  const auto width = static_cast<std::size_t>(search.width());
  for (std::size_t k = 0; k < width; ++k) logits_[k] = decoder_.logits(r.lanes[k]);
  search.consume(std::span<const std::span<float>>(logits_.data(), width));
  for (const WhisperLaneCopy& copy : search.copies()) {
    decoder_.copy(r.lanes[static_cast<std::size_t>(copy.from)], r.lanes[static_cast<std::size_t>(copy.to)], copy.audio);
  }
  if (search.rewind()) decoder_.rewind(r.lanes.front());
  // Detected in the prompt, if detecting; not from a partial decode's first half-second of speech.
  if (search.width() == 1 && !r.partial) r.stage->note_language(search);
  if (!search.done()) return true;
  return conclude_attempt(r);
}

bool SttAdapter::conclude_attempt(SttRequest& r) {
  const WhisperBeamSearch& search = *r.search;
  const SttOptions& options = r.stage->options();
  Transcript tried;
  tried.avg_logprob = static_cast<float>(search.avg_logprob());
  tried.no_speech_prob = search.no_speech_prob();
  tried.hit_token_limit = search.hit_token_limit();
  tried.window_frames = r.window_frames;
  tried.language = search.language();
  tried.language_probability = search.language_probability();
  tried.text = model_->decode(search.tokens());
  const WhisperAttempt attempt{options.fallback.temperatures[r.attempt], search.avg_logprob(), search.no_speech_prob(),
                               whisper_compression_ratio(tried.text)};
  tried.temperature = attempt.temperature;
  tried.compression_ratio = static_cast<float>(attempt.compression_ratio);
  r.attempts.push_back(attempt);
  r.results.push_back(std::move(tried));
  if (options.word_timestamps || r.partial) r.result_tokens.emplace_back(search.tokens().begin(), search.tokens().end());
  const std::optional<std::size_t> keep = whisper_kept_attempt(r.attempts, r.partial ? 1 : r.stage->attempts(),
                                                               options.decode,
                                                               options.fallback.compression_ratio_threshold);
  if (!keep) {
    // The next temperature on the same lanes: the first still holds the encoder output.
    const int language = search.language_token();
    const float probability = search.language_probability();
    ++r.attempt;
    for (int lane : r.lanes) decoder_.begin(lane, WhisperEncoder::positions(r.window_frames));
    r.search.emplace(r.stage->search(r.attempt));
    if (language >= 0 && model_->config().multilingual) r.search->set_language(language, probability);
    return true;
  }
  Transcript t = std::move(r.results[*keep]);
  if (!r.result_tokens.empty()) r.tokens = r.result_tokens[*keep];
  if (t.hit_token_limit && r.window_frames < full_frames_ && options.fit_fallback && !r.partial) {
    // Whisper repeated itself in the cut window: the full window, from the encoder on.
    release_lanes(r);
    r.search.reset();
    r.window_frames = full_frames_;
    r.key = key_of_window(full_frames_);
    return true;
  }
  // faster-whisper's skip rule, on the attempt kept.
  t.no_speech = whisper_no_speech(t.no_speech_prob, t.avg_logprob, options.decode);
  if (t.no_speech) t.text.clear();
  r.transcript = std::move(t);
  if (options.word_timestamps && !r.partial && !r.transcript.no_speech && !r.tokens.empty()) {
    return start_alignment(r, r.tokens, search.language_token());
  }
  finish(r);
  return false;
}

bool SttAdapter::start_alignment(SttRequest& r, std::span<const int> tokens, int language) {
  // faster-whisper's sot_sequence, without any prompt, on the first lane (it holds the encoder
  // output); the others go back.
  const WhisperConfig& config = model_->config();
  int sot_sequence[3] = {config.tokens.sot, language,
                         r.stage->options().decode.task == WhisperTask::kTranslate ? config.tokens.translate
                                                                                    : config.tokens.transcribe};
  const std::size_t sot_length = config.multilingual ? 3 : 1;
  const std::size_t samples16k = r.num_samples * static_cast<std::size_t>(WhisperFeatures::kSampleRateHz) /
                                 static_cast<std::size_t>(r.sample_rate_hz);
  r.aligner.emplace(config, std::span<const int>(sot_sequence, sot_length), tokens,
                    WhisperFeatures::content_frames(samples16k), decoder_.alignment_heads());
  if (const int steps = r.aligner->steps(); steps > decoder_.max_tokens()) {
    r.aligner.reset();
    r.failed = true;
    r.error_code = ErrorCode::kInternal;
    r.error = fmt::format("the word-timestamp pass needs {} decoder positions, the lanes hold {}", steps,
                          decoder_.max_tokens());
    finish(r);
    return false;
  }
  for (std::size_t k = 1; k < r.lanes.size(); ++k) decoder_.release(r.lanes[k]);
  r.lanes.resize(1);
  decoder_.rewind(r.lanes.front());
  r.search.reset();
  return true;
}

void SttAdapter::release_lanes(SttRequest& r) {
  for (int lane : r.lanes) decoder_.release(lane);
  r.lanes.clear();
}

void SttAdapter::finish(SttRequest& r) {
  release_lanes(r);
  r.search.reset();
  load_.fetch_sub(1, std::memory_order_relaxed);
  StreamState& s = *r.stream;
  if (!r.stage->deliver(r)) {
    // Nobody will read it: the slot goes straight back (the stream stays alive until then).
    pool_->release(&r);
    return;
  }
  // Its VAD worker alone writes the stream's events; the request keeps the stream alive.
  s.vad_pool->schedule(&s);
}

void SttStage::adopt_language(WhisperBeamSearch& search) const noexcept {
  if (!searches_.front().detects_language() || options_.language_detection != WhisperLanguageDetection::kFirst) return;
  const int token = language_token_.load(std::memory_order_acquire);
  // set_language cannot throw here: a fresh search, a token this model detected.
  if (token >= 0) search.set_language(token, language_probability_.load(std::memory_order_relaxed));
}

void SttStage::note_language(const WhisperBeamSearch& seq) noexcept {
  if (!searches_.front().detects_language() || options_.language_detection != WhisperLanguageDetection::kFirst) return;
  if (seq.language_token() < 0 || language_token_.load(std::memory_order_acquire) >= 0) return;
  // Two segments detecting at once: the first to get here wins; both keep what they detected.
  std::lock_guard lock(mu_);
  if (language_token_.load(std::memory_order_relaxed) >= 0) return;
  language_probability_.store(seq.language_probability(), std::memory_order_relaxed);
  language_token_.store(seq.language_token(), std::memory_order_release);
}

bool SttStage::deliver(SttRequest& r) {
  std::lock_guard lock(mu_);
  if (closed_) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  done_.push_back(&r);
  return true;
}

SttPool::SttPool(const ModelSpec& spec)
    : ModelPool(spec),
      model_(std::make_unique<WhisperModel>(WhisperModel::load(spec.path))),
      slots_(std::make_unique<RequestSlots<SttRequest>>(static_cast<std::size_t>(spec.max_pending), [](SttRequest& r) {
        r.audio.assign(kMaxSegmentSamples16k, 0.0f);
        r.lanes.reserve(16);
        r.prefix.reserve(256);  // a Whisper decode's tokens: at most n_text_ctx / 2
      })),
      pool_(spec,
            PoolShape{stt_num_keys(model_->config().dims.full_frames()), static_cast<std::size_t>(spec.max_pending)},
            [&](int /*worker*/) { return SttAdapter(*model_, spec, *this); }) {
  max_positions_ = pool_.adapter(0).max_positions();
  max_width_ = pool_.adapter(0).max_width();
  alignment_heads_ = pool_.adapter(0).alignment_heads();
}

void SttPool::stop() {
  slots_->close();  // a late submit fails (the stream waits) instead of waiting in a stopped queue
  pool_.stop();
}

bool SttPool::submit(StreamState& stream, SttStage& stage, std::uint64_t seq, double start_s, double end_s,
                     const AudioHistory::Range& audio, bool partial) {
  SttRequest* r = nullptr;
  {
    // Under the waiters' lock, so that a slot given back between a failed acquire and the wait
    // cannot miss this stream (release() gives slots back under the same lock).
    std::lock_guard lock(waiting_mu_);
    // A partial decode takes a slot only while more than half are free: the rest stay for segments'
    // final transcripts, which would otherwise wait behind partials (and hold their streams' frames).
    r = slots_->acquire(partial ? slots_->capacity() / 2 : 0);
    if (r == nullptr) {
      if (partial) return false;  // skipped: the next interval tries again
      if (!stage.waits_for_slot_) {
        stage.waits_for_slot_ = true;
        waiting_.emplace_back(stream.shared_from_this(), &stage);
      }
      return false;
    }
  }
  const std::size_t n = std::min(audio.first.size() + audio.second.size(), r->audio.size());
  const std::size_t n_first = std::min(audio.first.size(), n);
  std::copy_n(audio.first.begin(), n_first, r->audio.begin());
  std::copy_n(audio.second.begin(), n - n_first, r->audio.begin() + static_cast<std::ptrdiff_t>(n_first));
  r->num_samples = n;
  r->stream = stream.shared_from_this();
  r->stage = &stage;
  r->seq = seq;
  r->partial = partial;
  if (partial) r->prefix.assign(stage.agreed().begin(), stage.agreed().end());
  else r->prefix.clear();
  r->start_s = start_s;
  r->end_s = end_s;
  r->sample_rate_hz = stream.model_rate_hz;
  r->failed = false;
  r->error.clear();
  r->transcript = Transcript{};
  const SttOptions& options = stage.options();
  const int full = model_->config().dims.full_frames();
  const std::size_t samples16k = n * static_cast<std::size_t>(WhisperFeatures::kSampleRateHz) /
                                 static_cast<std::size_t>(stream.model_rate_hz);
  // A partial decode is cheap where it can be: the fit window.
  const bool full_window =
      partial ? !model_->supports_fit_window() : options.window == WhisperWindow::kFull;
  r->window_frames = full_window
                         ? full
                         : WhisperFeatures::fit_frames(WhisperFeatures::content_frames(samples16k),
                                                       WhisperFeatures::kDefaultFitGranularityFrames,
                                                       WhisperFeatures::kDefaultFitMinFrames, full);
  r->worker = pool_.least_loaded_worker();
  SttAdapter& adapter = pool_.adapter(r->worker);
  r->key = adapter.key_of_window(r->window_frames);
  adapter.add_load();
  pool_.schedule(r);
  return true;
}

void SttPool::release(SttRequest* r) {
  r->stream.reset();
  r->stage = nullptr;
  std::vector<std::pair<std::shared_ptr<StreamState>, SttStage*>> waiters;
  {
    std::lock_guard lock(waiting_mu_);
    slots_->release(r);
    waiters.swap(waiting_);
    for (auto& [stream, stage] : waiters) stage->waits_for_slot_ = false;
  }
  // Each tries again on its VAD worker; those that find no slot wait again.
  for (auto& [stream, stage] : waiters) stream->vad_pool->schedule(stream.get());
}

// --- the stream's side, on its VAD worker --------------------------------------------------------

bool SttStage::try_submit(StreamState& s, std::int64_t start_sample, std::int64_t end_sample, bool partial) {
  const auto max_samples = static_cast<std::int64_t>(kSttMaxSegmentS * s.model_rate_hz);
  const AudioHistory::Range audio = s.history->range(std::max(start_sample, end_sample - max_samples), end_sample);
  // Counted before the request can come back (its worker may finish it before submit returns).
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  if (!pool_->submit(s, *this, partial ? speech_segment_ : next_seq_, s.seconds(start_sample), s.seconds(end_sample),
                     audio, partial)) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    return false;
  }
  if (!partial) ++next_seq_;
  return true;
}

void SttStage::emit(StreamState& s, SttRequest& r) {
  if (r.failed) {
    s.output.set_error(fmt::format("the transcript of the segment {:.3f}-{:.3f} s of stream {} failed: {}", r.start_s,
                                   r.end_s, s.id, r.error));
    Event ev;
    ev.type = EventType::kError;
    ev.error_code = r.error_code;
    ev.start_s = r.start_s;
    ev.end_s = r.end_s;
    s.output.emit(ev);
    return;
  }
  Transcript& t = r.transcript;
  if (options_.word_timestamps && !t.no_speech) {
    // Placed here, in segment order: the pause rule looks back at the previous segment's words.
    double start = r.start_s;
    double end = r.end_s;
    t.words = whisper_place_words(std::move(r.timings), r.start_s, start, end, last_speech_s_);
    last_speech_s_ = t.words.empty() ? r.end_s : t.words.back().end_s;
  }
  emit_payload(s, r, EventType::kTranscript);
}

void SttStage::emit_payload(StreamState& s, const SttRequest& r, EventType type) {
  encode_transcript(r.transcript, payload_);
  Event ev;
  ev.type = type;
  ev.start_s = r.start_s;
  ev.end_s = r.end_s;
  ev.probability = r.transcript.no_speech_prob;
  s.output.emit_with_payload(ev, payload_, {}, false);
}

void SttStage::emit_partial(StreamState& s, SttRequest& r) {
  if (r.failed || r.transcript.no_speech) return;  // a failure shows in the segment's transcript
  const std::vector<int>& tokens = r.tokens;
  // LocalAgreement: the tokens this decode and the previous one begin with, cut back to where a
  // word starts (a token with a leading space), so that no word is half agreed.
  std::size_t agreed = 0;
  while (agreed < tokens.size() && agreed < previous_.size() && tokens[agreed] == previous_[agreed]) ++agreed;
  const WhisperVocabulary& vocabulary = pool_->model().vocabulary();
  auto starts_word = [&](int token) {
    const std::string_view b = vocabulary.bytes(token);
    return !b.empty() && b.front() == ' ';
  };
  while (agreed > agreed_.size() && agreed < tokens.size() && !starts_word(tokens[agreed])) --agreed;
  // What was agreed stays (the decode was forced to begin with it; one whose rules forbade a forced
  // token contradicts it and shows only it).
  const bool continues =
      tokens.size() >= agreed_.size() && std::equal(agreed_.begin(), agreed_.end(), tokens.begin());
  if (continues && agreed > agreed_.size()) agreed_.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(agreed));
  previous_ = tokens;
  Transcript& t = r.transcript;
  t.text = pool_->model().decode(agreed_);
  t.unstable = continues ? pool_->model().decode(std::span<const int>(tokens).subspan(agreed_.size())) : std::string();
  emit_payload(s, r, EventType::kTranscriptPartial);
}

void SttStage::release(SttRequest& r) {
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  pool_->release(&r);
}

void SttStage::on_segment(StreamState& s, const SegmentEvent& e) {
  if (e.kind == SegmentEvent::Kind::kSpeechStart) {
    if (options_.partial_interval_ms > 0) {
      in_speech_ = true;
      ++speech_segment_;
      speech_start_ = e.start_sample;
      last_partial_ = s.history->written();
      agreed_.clear();
      previous_.clear();
    }
    return;
  }
  in_speech_ = false;
  if (deferred_ || !try_submit(s, e.start_sample, e.end_sample)) {
    // Only one segment can wait: the stream holds its frames until it is submitted.
    deferred_ = true;
    deferred_start_ = e.start_sample;
    deferred_end_ = e.end_sample;
  }
}

void SttStage::on_frame(StreamState& s, float /*probability*/, std::int64_t /*frame_ready_ns*/) { ask_partial(s); }

void SttStage::ask_partial(StreamState& s) {
  if (!in_speech_ || partial_in_flight_) return;
  const std::int64_t now = s.history->written();
  const std::int64_t interval = static_cast<std::int64_t>(options_.partial_interval_ms) * s.model_rate_hz / 1000;
  if (now - last_partial_ < interval) return;
  last_partial_ = now;  // asked now, or skipped until the next interval (no free slot)
  if (now - speech_start_ > static_cast<std::int64_t>(kSttMaxSegmentS * s.model_rate_hz)) return;
  partial_in_flight_ = try_submit(s, speech_start_, now, true);
}

void SttStage::collect(StreamState& s) {
  // Partial decodes first: one of the open segment becomes an event, a stale one is dropped.
  while (true) {
    SttRequest* partial = nullptr;
    {
      std::lock_guard lock(mu_);
      const auto it = std::find_if(done_.begin(), done_.end(), [](SttRequest* r) { return r->partial; });
      if (it != done_.end()) {
        partial = *it;
        *it = done_.back();
        done_.pop_back();
      }
    }
    if (partial == nullptr) break;
    partial_in_flight_ = false;
    if (in_speech_ && partial->seq == speech_segment_) emit_partial(s, *partial);
    release(*partial);
    ask_partial(s);  // its interval may be up already: the next is not left for the next frame
  }
  while (true) {
    SttRequest* next = nullptr;
    {
      std::lock_guard lock(mu_);
      const auto it = std::find_if(done_.begin(), done_.end(),
                                   [&](SttRequest* r) { return !r->partial && r->seq == next_emit_; });
      if (it != done_.end()) {
        next = *it;
        *it = done_.back();
        done_.pop_back();
      }
    }
    if (next == nullptr) break;
    emit(s, *next);
    ++next_emit_;
    release(*next);
  }
  if (deferred_ && try_submit(s, deferred_start_, deferred_end_)) deferred_ = false;
}

void SttStage::close(StreamState& /*s*/) {
  std::vector<SttRequest*> done;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    done.swap(done_);
  }
  for (SttRequest* r : done) release(*r);
}

}  // namespace brisvox::engine
