#include "brisvox/models/stt/whisper_transcriber.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "brisvox/models/stt/whisper_decoder.h"
#include "brisvox/models/stt/whisper_encoder.h"
#include "brisvox/models/stt/whisper_beam.h"
#include "brisvox/models/stt/whisper_fallback.h"

namespace brisvox {

std::string WhisperTranscript::text() const {
  std::string out;
  for (const auto& s : segments) out += s.text;
  return out;
}

struct WhisperTranscriber::Impl {
  WhisperModel model;
  int max_batch;
  WhisperEncoder encoder;
  WhisperDecoder decoder;

  Impl(const WhisperModel& m, const WhisperTranscriberConfig& config)
      : model(m),
        max_batch(config.max_batch),
        encoder(m, WhisperEncoderConfig{config.max_batch, WhisperFeatures::kDefaultFitGranularityFrames, config.session}),
        decoder(m, WhisperDecoderConfig{std::max(config.max_batch, config.max_width), config.max_tokens, 0, config.session}) {}
};

WhisperTranscriber::WhisperTranscriber(const WhisperModel& model, const WhisperTranscriberConfig& config) {
  if (config.max_batch < 1 || config.max_batch > 64) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper transcriber max_batch must be 1 to 64, got {}", config.max_batch));
  }
  if (config.max_width < 1 || config.max_width > 16) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper transcriber max_width must be 1 to 16, got {}", config.max_width));
  }
  impl_ = std::make_unique<Impl>(model, config);
}

WhisperTranscriber::~WhisperTranscriber() = default;
WhisperTranscriber::WhisperTranscriber(WhisperTranscriber&&) noexcept = default;
WhisperTranscriber& WhisperTranscriber::operator=(WhisperTranscriber&&) noexcept = default;

void WhisperTranscriber::cancel_run() noexcept {
  impl_->encoder.cancel_run();
  impl_->decoder.cancel_run();
}

void WhisperTranscriber::clear_cancel() noexcept {
  impl_->encoder.clear_cancel();
  impl_->decoder.clear_cancel();
}

WhisperTranscribeOptions WhisperTranscribeOptions::faster_whisper() {
  WhisperTranscribeOptions o;
  use_faster_whisper_decoding(o.decode, o.fallback);
  return o;
}

WhisperTranscript WhisperTranscriber::transcribe(std::span<const float> audio, int sample_rate_hz,
                                                 const WhisperTranscribeOptions& options) {
  Impl& m = *impl_;
  if (sample_rate_hz < 1 || sample_rate_hz > Resampler::kMaxRateHz) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper: sample rate {} Hz is not in [1, {}]", sample_rate_hz,
                                                         Resampler::kMaxRateHz));
  }
  for (std::size_t i = 0; i < audio.size(); ++i) {
    if (!std::isfinite(audio[i])) {
      throw Error(ErrorCode::kBadAudio, fmt::format("Whisper input sample {} ({:.3f} s) is {}", i,
                                                    static_cast<double>(i) / sample_rate_hz, audio[i]));
    }
  }
  if (options.window == WhisperWindow::kFit && !m.model.supports_fit_window()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper model '{}' ({} layout) takes only full 30 s windows: its encoder adds the whole "
                            "positional table; use WhisperWindow::kFull",
                            m.model.folder(), to_string(m.model.layout())));
  }
  // One search per temperature, built (and checked) before any work.
  std::vector<WhisperSearch> searches;
  for (const WhisperDecodeOptions& d : options.fallback.attempts(options.decode)) {
    searches.emplace_back(m.model.config(), d, &m.model.vocabulary());
  }
  const WhisperSearch& search = searches.front();
  constexpr int kGranularity = WhisperFeatures::kDefaultFitGranularityFrames;
  if (options.fit_min_frames < 0 || options.fit_min_frames % kGranularity != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: fit_min_frames must be a multiple of {}, got {}", kGranularity, options.fit_min_frames));
  }
  if (search.max_positions() > m.decoder.max_tokens()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: a prompt of {} and max_new_tokens {} need {} cache positions, the decoder has {} "
                            "(WhisperTranscriberConfig::max_tokens)",
                            search.prompt().size(), search.max_new_tokens(), search.max_positions(),
                            m.decoder.max_tokens()));
  }
  if (options.word_timestamps && m.decoder.alignment_heads() == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper model '{}' ({} layout) has no alignment heads, which word timestamps need: convert "
                            "it with tools/whisper/convert_ct2.py (brisvox layout)",
                            m.model.folder(), to_string(m.model.layout())));
  }
  const int width = options.fallback.max_width(options.decode);
  if (width > m.decoder.max_lanes()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: beam_size/best_of {} needs as many decoder lanes; this transcriber has {} "
                            "(WhisperTranscriberConfig::max_width)",
                            width, m.decoder.max_lanes()));
  }

  const std::vector<float> resampled =
      sample_rate_hz == WhisperFeatures::kSampleRateHz ? std::vector<float>()
                                                       : resample(audio, sample_rate_hz, WhisperFeatures::kSampleRateHz);
  const std::span<const float> samples = sample_rate_hz == WhisperFeatures::kSampleRateHz
                                             ? audio
                                             : std::span<const float>(resampled);
  WhisperTranscript transcript;
  const int content = WhisperFeatures::content_frames(samples.size());
  if (content == 0) return transcript;
  const std::vector<float> mel = WhisperFeatures::whole_recording(samples);
  const int total = content + 1;
  const int full = m.model.config().dims.full_frames();

  struct Window {
    int first;
    int count;
    int frames;
  };
  std::vector<Window> windows;
  for (int seek = 0; seek < content;) {
    const int count = std::min(full, content - seek);
    const int frames = options.window == WhisperWindow::kFull
                           ? full
                           : WhisperFeatures::fit_frames(count, kGranularity, options.fit_min_frames, full);
    windows.push_back({seek, count, frames});
    seek += count;
  }

  // A window being decoded: its lanes (the first holds its encoder output), the attempt at the
  // current temperature, and the earlier attempts' results; then, with word timestamps, its
  // alignment pass on the first lane.
  struct Decode {
    std::size_t window = 0;
    std::vector<int> lanes;
    std::size_t attempt = 0;
    std::unique_ptr<WhisperBeamSearch> search;
    std::vector<WhisperAttempt> attempts;
    std::vector<WhisperSegment> results;
    std::unique_ptr<WhisperAligner> aligner;
    std::string language;
  };
  std::vector<std::vector<WhisperWordTiming>> timings(windows.size());

  const std::size_t mels = WhisperFeatures::kMels;
  const std::size_t per_batch =
      static_cast<std::size_t>(std::max(1, std::min(m.max_batch, m.decoder.max_lanes() / width)));
  std::vector<float> batch_mel(per_batch * mels * static_cast<std::size_t>(full));
  std::vector<int> tokens(static_cast<std::size_t>(m.decoder.max_lanes()), 0);
  std::vector<std::span<float>> logits(static_cast<std::size_t>(width));
  transcript.segments.resize(windows.size());

  // Frees the decoder's lanes however this call ends, so the transcriber stays usable.
  struct Release {
    WhisperDecoder& decoder;
    ~Release() {
      for (int s = 0; s < decoder.max_lanes(); ++s) {
        if (decoder.busy(s)) decoder.release(s);
      }
    }
  } release{m.decoder};

  // kFirst detection: window 0's language, given to every other window before its language is fed.
  const bool share_language =
      search.detects_language() && options.language_detection == WhisperLanguageDetection::kFirst;
  int first_language = -1;
  float first_probability = 0.0f;
  const int eot = m.model.config().tokens.eot;

  // Windows in the order they are decoded; a fit window that ends at the token limit (Whisper
  // repeating itself: it was trained on 30 s windows) is queued again as a full window.
  std::vector<std::size_t> queue(windows.size());
  for (std::size_t i = 0; i < windows.size(); ++i) queue[i] = i;
  for (std::size_t q = 0; q < queue.size();) {
    // A batch: consecutive windows of one length (all full ones; with kFit the last may differ).
    std::size_t n = 0;
    const int frames = windows[queue[q]].frames;
    while (q + n < queue.size() && n < per_batch && windows[queue[q + n]].frames == frames) ++n;
    std::vector<const float*> mel_ptrs;
    std::vector<WhisperEncoderOutput> targets;
    std::vector<Decode> active(n);
    for (std::size_t i = 0; i < n; ++i) {
      Decode& d = active[i];
      d.window = queue[q + i];
      const Window& win = windows[d.window];
      float* dst = batch_mel.data() + i * mels * static_cast<std::size_t>(frames);
      WhisperFeatures::cut_window(mel, total, win.first, win.count, frames,
                                  std::span<float>(dst, mels * static_cast<std::size_t>(frames)));
      for (int k = 0; k < width; ++k) {
        d.lanes.push_back(m.decoder.acquire());
        const WhisperEncoderOutput target = m.decoder.begin(d.lanes.back(), WhisperEncoder::positions(frames));
        if (k == 0) targets.push_back(target);
      }
      mel_ptrs.push_back(dst);
      d.search = std::make_unique<WhisperBeamSearch>(searches.front());
      if (first_language >= 0) d.search->set_language(first_language, first_probability);
    }
    m.encoder.run(frames, mel_ptrs, targets);
    for (std::size_t live = n; live > 0;) {
      std::fill(tokens.begin(), tokens.end(), eot);  // lanes without a live sequence: any token
      for (const Decode& d : active) {
        if (d.aligner) tokens[static_cast<std::size_t>(d.lanes.front())] = d.aligner->next_token();
        if (!d.search) continue;
        for (int k = 0; k < d.search->width(); ++k) {
          tokens[static_cast<std::size_t>(d.lanes[static_cast<std::size_t>(k)])] = d.search->next_token(k);
        }
      }
      m.decoder.step(tokens);
      for (Decode& d : active) {
        if (d.aligner) {
          const int lane = d.lanes.front();
          d.aligner->consume(m.decoder.logits(lane), m.decoder.alignment(lane), m.decoder.max_audio_positions());
          if (d.aligner->done()) {
            timings[d.window] = whisper_word_timings(m.model.vocabulary(), eot, d.language, *d.aligner);
            m.decoder.release(lane);
            d.aligner.reset();
            --live;
          }
          continue;
        }
        if (!d.search) continue;
        for (int k = 0; k < d.search->width(); ++k) {
          logits[static_cast<std::size_t>(k)] = m.decoder.logits(d.lanes[static_cast<std::size_t>(k)]);
        }
        d.search->consume(std::span<const std::span<float>>(logits.data(), static_cast<std::size_t>(d.search->width())));
        for (const WhisperLaneCopy& c : d.search->copies()) {
          m.decoder.copy(d.lanes[static_cast<std::size_t>(c.from)], d.lanes[static_cast<std::size_t>(c.to)], c.audio);
        }
        if (d.search->rewind()) m.decoder.rewind(d.lanes.front());
      }
      if (share_language && first_language < 0) {
        // The start step was consumed (every window detected): window 0's language for all.
        for (const Decode& d : active) {
          if (d.search && d.window == 0) {
            first_language = d.search->language_token();
            first_probability = d.search->language_probability();
          }
        }
        for (Decode& d : active) {
          if (d.search && first_language >= 0) d.search->set_language(first_language, first_probability);
        }
      }
      for (Decode& d : active) {
        if (!d.search || !d.search->done()) continue;
        const WhisperBeamSearch& bs = *d.search;
        Window& win = windows[d.window];
        WhisperSegment seg;
        seg.start_s = win.first * 0.01;
        seg.end_s = (win.first + win.count) * 0.01;
        seg.tokens.assign(bs.tokens().begin(), bs.tokens().end());
        seg.avg_logprob = bs.avg_logprob();
        seg.no_speech_prob = bs.no_speech_prob();
        seg.hit_token_limit = bs.hit_token_limit();
        seg.window_frames = win.frames;
        seg.language = std::string(bs.language());
        seg.language_probability = bs.language_probability();
        seg.temperature = options.fallback.temperatures[d.attempt];
        seg.text = m.model.decode(seg.tokens);
        seg.compression_ratio = whisper_compression_ratio(seg.text);
        d.attempts.push_back({seg.temperature, seg.avg_logprob, seg.no_speech_prob, seg.compression_ratio});
        d.results.push_back(std::move(seg));
        const int language = bs.language_token();
        const float language_probability = bs.language_probability();
        const std::optional<std::size_t> keep =
            whisper_kept_attempt(d.attempts, searches.size(), options.decode, options.fallback.compression_ratio_threshold);
        if (!keep) {
          // Again from the same encoder output, at the next temperature, in the same language.
          ++d.attempt;
          for (int lane : d.lanes) m.decoder.begin(lane, WhisperEncoder::positions(frames));
          d.search = std::make_unique<WhisperBeamSearch>(searches[d.attempt]);
          if (language >= 0 && m.model.config().multilingual) d.search->set_language(language, language_probability);
          continue;
        }
        WhisperSegment& chosen = d.results[*keep];
        chosen.attempts = d.attempts;
        // faster-whisper's skip rule on the attempt kept.
        chosen.no_speech = whisper_no_speech(chosen.no_speech_prob, chosen.avg_logprob, options.decode);
        if (chosen.no_speech) chosen.text.clear();
        const bool refit = chosen.hit_token_limit && win.frames < full && options.fit_fallback;
        const bool align = options.word_timestamps && !refit && !chosen.no_speech && !chosen.tokens.empty();
        if (align) {
          // The alignment pass: faster-whisper's sot_sequence (no prompt) on the first lane.
          std::vector<int> sot_sequence{m.model.config().tokens.sot};
          if (m.model.config().multilingual) {
            sot_sequence.push_back(language);
            sot_sequence.push_back(options.decode.task == WhisperTask::kTranslate ? m.model.config().tokens.translate
                                                                                   : m.model.config().tokens.transcribe);
          }
          d.aligner = std::make_unique<WhisperAligner>(m.model.config(), sot_sequence, chosen.tokens, win.count,
                                                       m.decoder.alignment_heads());
          d.language = chosen.language;
          if (d.aligner->steps() > m.decoder.max_tokens()) {
            throw Error(ErrorCode::kInvalidArgument,
                        fmt::format("Whisper: the word-timestamp pass of {} tokens does not fit the decoder's {} positions",
                                    d.aligner->steps(), m.decoder.max_tokens()));
          }
        }
        transcript.segments[d.window] = std::move(chosen);
        if (refit) {
          win.frames = full;
          queue.push_back(d.window);
        }
        for (std::size_t k = align ? 1 : 0; k < d.lanes.size(); ++k) m.decoder.release(d.lanes[k]);
        if (align) m.decoder.rewind(d.lanes.front());
        d.search.reset();
        if (!align) --live;
      }
    }
    q += n;
  }
  if (options.word_timestamps) {
    // faster-whisper's placement, window after window: the pause rule looks back at the previous
    // window's last word.
    double last_speech = 0.0;
    for (std::size_t w = 0; w < transcript.segments.size(); ++w) {
      WhisperSegment& seg = transcript.segments[w];
      if (seg.no_speech) continue;
      const double window_start = seg.start_s;
      seg.words = whisper_place_words(std::move(timings[w]), window_start, seg.start_s, seg.end_s, last_speech,
                                      options.words);
      last_speech = seg.words.empty() ? seg.end_s : seg.words.back().end_s;
    }
  }
  if (!transcript.segments.empty()) {
    transcript.language = transcript.segments.front().language;
    transcript.language_probability = transcript.segments.front().language_probability;
  }
  return transcript;
}

WhisperTranscript transcribe(const WhisperModel& model, std::span<const float> audio, int sample_rate_hz,
                             const WhisperTranscribeOptions& options) {
  WhisperTranscriberConfig config;
  config.max_batch = 1;
  config.max_width = options.fallback.max_width(options.decode);
  if (!options.decode.prompt.empty() || !options.decode.hotwords.empty()) config.max_tokens = model.config().dims.n_text_ctx;
  WhisperTranscriber transcriber(model, config);
  return transcriber.transcribe(audio, sample_rate_hz, options);
}

}  // namespace brisvox
