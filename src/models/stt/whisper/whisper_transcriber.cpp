#include "brisvox/models/stt/whisper_transcriber.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "brisvox/models/stt/whisper_decoder.h"
#include "brisvox/models/stt/whisper_encoder.h"

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
        decoder(m, WhisperDecoderConfig{config.max_batch, 0, 0, config.session}) {}
};

WhisperTranscriber::WhisperTranscriber(const WhisperModel& model, const WhisperTranscriberConfig& config) {
  if (config.max_batch < 1 || config.max_batch > 64) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper transcriber max_batch must be 1 to 64, got {}", config.max_batch));
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
  const WhisperGreedySearch search(m.model.config(), options.decode);
  constexpr int kGranularity = WhisperFeatures::kDefaultFitGranularityFrames;
  if (options.fit_min_frames < 0 || options.fit_min_frames % kGranularity != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: fit_min_frames must be a multiple of {}, got {}", kGranularity, options.fit_min_frames));
  }
  if (search.max_positions() > m.decoder.max_tokens()) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: a prompt of {} and max_new_tokens {} need {} cache positions, the decoder has {}",
                            search.prompt().size(), search.max_new_tokens(), search.max_positions(),
                            m.decoder.max_tokens()));
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

  const std::size_t mels = WhisperFeatures::kMels;
  std::vector<float> batch_mel(static_cast<std::size_t>(m.max_batch) * mels * static_cast<std::size_t>(full));
  std::vector<WhisperSequence> sequences;
  sequences.reserve(static_cast<std::size_t>(m.max_batch));
  for (int i = 0; i < m.max_batch; ++i) sequences.emplace_back(search);
  std::vector<int> lane_window(static_cast<std::size_t>(m.max_batch), -1);
  std::vector<int> tokens(static_cast<std::size_t>(m.max_batch), 0);
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

  // Windows in the order they are decoded; a fit window that ends at the token limit (Whisper
  // repeating itself: it was trained on 30 s windows) is queued again as a full window.
  std::vector<std::size_t> queue(windows.size());
  for (std::size_t i = 0; i < windows.size(); ++i) queue[i] = i;
  for (std::size_t q = 0; q < queue.size();) {
    // A batch: consecutive windows of one length (all full ones; with kFit the last may differ).
    std::size_t n = 0;
    const int frames = windows[queue[q]].frames;
    while (q + n < queue.size() && n < static_cast<std::size_t>(m.max_batch) && windows[queue[q + n]].frames == frames) {
      ++n;
    }
    std::vector<const float*> mel_ptrs;
    std::vector<WhisperEncoderOutput> targets;
    for (std::size_t i = 0; i < n; ++i) {
      const Window& win = windows[queue[q + i]];
      float* dst = batch_mel.data() + i * mels * static_cast<std::size_t>(frames);
      WhisperFeatures::cut_window(mel, total, win.first, win.count, frames,
                                  std::span<float>(dst, mels * static_cast<std::size_t>(frames)));
      const int lane = m.decoder.acquire();
      targets.push_back(m.decoder.begin(lane, WhisperEncoder::positions(frames)));
      mel_ptrs.push_back(dst);
      lane_window[static_cast<std::size_t>(lane)] = static_cast<int>(queue[q + i]);
      sequences[static_cast<std::size_t>(lane)].reset();
      if (first_language >= 0) sequences[static_cast<std::size_t>(lane)].set_language(first_language, first_probability);
    }
    m.encoder.run(frames, mel_ptrs, targets);
    while (m.decoder.busy_count() > 0) {
      for (int s = 0; s < m.decoder.active_end(); ++s) {
        if (m.decoder.busy(s)) tokens[static_cast<std::size_t>(s)] = sequences[static_cast<std::size_t>(s)].next_token();
      }
      m.decoder.step(tokens);
      for (int s = 0; s < m.decoder.active_end(); ++s) {
        if (m.decoder.busy(s)) sequences[static_cast<std::size_t>(s)].consume(m.decoder.logits(s));
      }
      if (share_language && first_language < 0) {
        // The start step was consumed (every lane detected): window 0's language for all.
        for (int s = 0; s < m.decoder.active_end(); ++s) {
          if (m.decoder.busy(s) && lane_window[static_cast<std::size_t>(s)] == 0) {
            first_language = sequences[static_cast<std::size_t>(s)].language_token();
            first_probability = sequences[static_cast<std::size_t>(s)].language_probability();
          }
        }
        for (int s = 0; s < m.decoder.active_end(); ++s) {
          if (m.decoder.busy(s)) sequences[static_cast<std::size_t>(s)].set_language(first_language, first_probability);
        }
      }
      for (int s = 0; s < m.decoder.active_end(); ++s) {
        if (!m.decoder.busy(s)) continue;
        WhisperSequence& seq = sequences[static_cast<std::size_t>(s)];
        if (!seq.done()) continue;
        const auto index = static_cast<std::size_t>(lane_window[static_cast<std::size_t>(s)]);
        Window& win = windows[index];
        WhisperSegment& seg = transcript.segments[index];
        seg.start_s = win.first * 0.01;
        seg.end_s = (win.first + win.count) * 0.01;
        seg.tokens.assign(seq.tokens().begin(), seq.tokens().end());
        seg.avg_logprob = seq.avg_logprob();
        seg.no_speech_prob = seq.no_speech_prob();
        seg.no_speech = seq.no_speech();
        seg.hit_token_limit = seq.hit_token_limit();
        seg.window_frames = win.frames;
        seg.language = std::string(seq.language());
        seg.language_probability = seq.language_probability();
        seg.text.clear();
        if (!seg.no_speech) seg.text = m.model.decode(seg.tokens);
        if (seg.hit_token_limit && win.frames < full && options.fit_fallback) {
          win.frames = full;
          queue.push_back(index);
        }
        m.decoder.release(s);
      }
    }
    q += n;
  }
  if (!transcript.segments.empty()) {
    transcript.language = transcript.segments.front().language;
    transcript.language_probability = transcript.segments.front().language_probability;
  }
  return transcript;
}

WhisperTranscript transcribe(const WhisperModel& model, std::span<const float> audio, int sample_rate_hz,
                             const WhisperTranscribeOptions& options) {
  WhisperTranscriber transcriber(model, WhisperTranscriberConfig{1, {}});
  return transcriber.transcribe(audio, sample_rate_hz, options);
}

}  // namespace brisvox
