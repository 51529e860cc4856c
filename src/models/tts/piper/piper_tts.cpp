#include "brisvox/models/tts/piper_tts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "brisvox/audio/pcm.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "base/log.h"
#include "models/tts/piper/piper_text.h"
#include "models/tts/piper/unicode_text.h"
#include "models/tts/piper/winograd_op.h"
#include "runtime/onnx_header.h"

namespace brisvox {
namespace {

// Sentences of a batch are within this factor of the longest one's ids, so that padding wastes
// little (VITS computes the whole padded batch).
constexpr double kBatchLengthRatio = 0.75;

void finish_audio(std::vector<float>& audio, bool normalize, float volume) {
  if (normalize) {
    float peak = 0.0f;
    for (const float x : audio) peak = std::max(peak, std::fabs(x));
    if (peak < 1e-8f) {
      std::fill(audio.begin(), audio.end(), 0.0f);
    } else {
      for (float& x : audio) x /= peak;
    }
  }
  for (float& x : audio) x = std::clamp(x * volume, -1.0f, 1.0f);
}

// VOICE.conv2d.onnx beside VOICE.onnx, when it is there and not older (a voice replaced since
// the rewrite was made must not run the old one); else the voice itself.
std::string runtime_model_path(const PiperTtsConfig& config) {
  namespace fs = std::filesystem;
  if (!config.use_conv2d_rewrite || config.max_batch > 1) return config.model_path;
  const fs::path voice(config.model_path);
  if (voice.extension() != ".onnx") return config.model_path;
  const fs::path rewrite = fs::path(voice).replace_extension(".conv2d.onnx");
  std::error_code ec;
  if (!fs::is_regular_file(rewrite, ec) || !fs::is_regular_file(voice, ec)) return config.model_path;
  const auto rewrite_time = fs::last_write_time(rewrite, ec);
  if (ec) return config.model_path;
  const auto voice_time = fs::last_write_time(voice, ec);
  if (ec || rewrite_time < voice_time) {
    detail::log(LogLevel::kWarn, "'{}' is older than the voice '{}': running the voice itself (make the rewrite "
                "again with tools/piper/conv2d_rewrite.py)", rewrite.string(), config.model_path);
    return config.model_path;
  }
  // Pass 6's operator without a vector kernel here would make the rewrite slower than the voice.
  ModelInfo header;
  if (runtime::read_onnx_header(rewrite.string(), header) && header.opsets.count(piper::kPiperOpDomain) &&
      !piper::winograd_vectorised()) {
    detail::log(LogLevel::kWarn, "'{}' has WinogradConv nodes, and they have no vector kernel here (the CPU has "
                "neither AVX2 nor AVX-512, or BRISVOX_WINOGRAD_ISA=generic): running the voice itself "
                "(tools/piper/conv2d_rewrite.py --portable writes a rewrite without them)", rewrite.string());
    return config.model_path;
  }
  return rewrite.string();
}

}  // namespace

struct PiperTts::Impl {
  PiperTtsConfig config;
  PiperVoiceConfig voice;
  EspeakPhonemizer phonemizer;
  PiperVits vits;

  Impl(const PiperTtsConfig& c, PiperVoiceConfig v, EspeakPhonemizer p, PiperVits m)
      : config(c), voice(std::move(v)), phonemizer(std::move(p)), vits(std::move(m)) {}
};

PiperTts::PiperTts(const PiperTtsConfig& config) {
  if (config.max_text_bytes < 1 || config.max_text_bytes > 1000000) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Piper max_text_bytes must be 1 to 1000000, got {}", config.max_text_bytes));
  }
  if (config.model_path.empty()) throw Error(ErrorCode::kInvalidArgument, "Piper model_path is empty");
  const std::string config_path = config.config_path.empty() ? config.model_path + ".json" : config.config_path;
  PiperVoiceConfig voice = load_piper_voice_config(config_path);
  EspeakPhonemizerConfig pc;
  pc.voice = voice.espeak_voice;
  pc.install = config.espeak;
  pc.timeout_ms = config.espeak_timeout_ms;
  pc.vowel_clusters = voice.vowel_clusters;
  PiperVitsConfig vc;
  vc.model_path = runtime_model_path(config);
  vc.max_batch = config.max_batch;
  vc.max_phoneme_ids = config.max_phoneme_ids;
  vc.hop_length = voice.hop_length;
  vc.num_speakers = voice.num_speakers;
  vc.session = config.session;
  // The model first: a wrong model path is reported before espeak-ng is started.
  PiperVits vits(vc);
  EspeakPhonemizer phonemizer(std::move(pc));
  impl_ = std::make_unique<Impl>(config, std::move(voice), std::move(phonemizer), std::move(vits));
}

PiperTts::~PiperTts() = default;
PiperTts::PiperTts(PiperTts&&) noexcept = default;
PiperTts& PiperTts::operator=(PiperTts&&) noexcept = default;

const PiperVoiceConfig& PiperTts::voice() const { return impl_->voice; }
std::size_t PiperTts::max_text_bytes() const { return impl_->config.max_text_bytes; }
EspeakPhonemizer& PiperTts::phonemizer() { return impl_->phonemizer; }
PiperVits& PiperTts::model() { return impl_->vits; }
void PiperTts::cancel_run() noexcept { impl_->vits.cancel_run(); }
void PiperTts::clear_cancel() noexcept { impl_->vits.clear_cancel(); }

void check_piper_text(std::string_view text_utf8, std::size_t max_text_bytes) {
  if (text_utf8.size() > max_text_bytes) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("text is {} bytes, more than the limit of {} bytes per request; split it into several "
                            "requests",
                            text_utf8.size(), max_text_bytes));
  }
  const std::u32string text = tts::decode_utf8(text_utf8);
  tts::check_no_control_characters(text);
  if (std::all_of(text.begin(), text.end(), [](char32_t c) { return tts::is_space(c); })) {
    throw Error(ErrorCode::kInvalidArgument, "text is empty: there is nothing to say");
  }
}

namespace {

PiperScales scales_of(const PiperRequest& request, const PiperVoiceConfig& voice) {
  PiperScales sc = voice.scales;
  if (request.noise_scale) sc.noise_scale = *request.noise_scale;
  if (request.length_scale) sc.length_scale = *request.length_scale;
  if (request.noise_w_scale) sc.noise_w_scale = *request.noise_w_scale;
  return sc;
}

// Where fast_start cuts the first sentence: after its first clause terminator (',' ';' ':', with
// the space espeak-ng's next clause starts with), when a phoneme other than a space follows.
// These are the phonemes Piper gives each of the two clauses phonemized alone. 0: no cut.
std::size_t first_clause_end(const PhonemeSentence& phonemes) {
  for (std::size_t i = 0; i + 1 < phonemes.size(); ++i) {
    const std::string& p = phonemes[i];
    if (p != "," && p != ";" && p != ":") continue;
    std::size_t end = i + 1;
    if (phonemes[end] == " ") ++end;
    for (std::size_t k = end; k < phonemes.size(); ++k) {
      if (phonemes[k] != " ") return end;
    }
    return 0;
  }
  return 0;
}

}  // namespace

void check_piper_options(const PiperRequest& request, const PiperVoiceConfig& voice) {
  const PiperScales sc = scales_of(request, voice);
  // One run's memory grows with the audio it makes (about 17 MB per second of it on
  // en_US-joe-medium), and both of these lengthen it: length_scale in proportion, noise_w_scale
  // as the exponent of the durations' noise. Measured on a 37-word sentence (docs/RELIABILITY.md,
  // D3): noise_w_scale 2 gives at most 1.4x the default's audio, 2.5 gave 8x and 3 or more
  // gigabytes; length_scale 4 takes 0.8 GB, 10 took 1.6 GB. noise_scale changes no length.
  if (!std::isfinite(sc.noise_scale) || !std::isfinite(sc.length_scale) || !std::isfinite(sc.noise_w_scale) ||
      sc.noise_scale < 0.0f || sc.noise_scale > kPiperMaxNoiseScale || sc.noise_w_scale < 0.0f ||
      sc.noise_w_scale > kPiperMaxNoiseWScale || sc.length_scale < kPiperMinLengthScale ||
      sc.length_scale > kPiperMaxLengthScale) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("scales out of range: noise_scale {} must be 0 to {}, noise_w_scale {} 0 to {} and "
                            "length_scale {} {} to {}",
                            sc.noise_scale, kPiperMaxNoiseScale, sc.noise_w_scale, kPiperMaxNoiseWScale,
                            sc.length_scale, kPiperMinLengthScale, kPiperMaxLengthScale));
  }
  if (request.speaker_id && (*request.speaker_id < 0 || *request.speaker_id >= voice.num_speakers)) {
    // A request's error reaches the client: the voice by its name, never the server's file path.
    std::string name = std::filesystem::path(voice.config_path).filename().string();
    if (const auto dot = name.find(".onnx"); dot != std::string::npos) name.resize(dot);
    throw Error(ErrorCode::kInvalidArgument, fmt::format("speaker_id {} is outside [0, {}) for voice '{}'",
                                                         *request.speaker_id, voice.num_speakers, name));
  }
  const int rate = request.output_rate_hz;
  if (rate != 0 && rate != voice.sample_rate_hz && rate != 8000 && rate != 16000 && rate != 24000 && rate != 48000) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("a speech sample rate of {} Hz is not supported: use 0 (the voice's {} Hz), 8000, "
                            "16000, 24000 or 48000",
                            rate, voice.sample_rate_hz));
  }
  if (!std::isfinite(request.volume) || request.volume < 0.0f || request.volume > 10.0f) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("volume {} must be 0 to 10", request.volume));
  }
}

PiperSynthesis PiperTts::start(const PiperRequest& request) {
  Impl& m = *impl_;
  check_piper_text(request.text, m.config.max_text_bytes);
  check_piper_options(request, m.voice);
  PiperSynthesis s;
  s.scales_ = scales_of(request, m.voice);
  s.speaker_id_ = m.voice.num_speakers > 1 ? m.voice.default_speaker_id : 0;
  if (request.speaker_id) s.speaker_id_ = *request.speaker_id;
  const int rate = request.output_rate_hz;
  s.output_rate_hz_ = rate == 0 ? m.voice.sample_rate_hz : rate;
  s.normalize_ = request.normalize;
  s.volume_ = request.volume;

  auto sentences = m.phonemizer.phonemize(request.text);
  std::size_t split_at = 0;  // fast_start: sentences[0] and [1] are the first sentence's two parts
  if (request.fast_start && !sentences.empty()) {
    split_at = first_clause_end(sentences[0]);
    if (split_at > 0) {
      PhonemeSentence rest(sentences[0].begin() + static_cast<std::ptrdiff_t>(split_at), sentences[0].end());
      sentences[0].resize(split_at);
      sentences.insert(sentences.begin() + 1, std::move(rest));
    }
  }
  for (std::size_t i = 0; i < sentences.size(); ++i) {
    const std::size_t number = split_at > 0 && i > 0 ? i : i + 1;  // of the sentence in the text, from 1
    PhonemeIds ids = phonemes_to_ids(sentences[i], m.voice);
    if (ids.ids.size() > static_cast<std::size_t>(m.config.max_phoneme_ids)) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("sentence {} has {} phoneme ids, more than the {} one model run takes; end it with . ? or "
                              "! somewhere",
                              number, ids.ids.size(), m.config.max_phoneme_ids));
    }
    if (!ids.missing.empty()) {
      detail::log(LogLevel::kWarn, "Piper voice '{}' has no id for {} phoneme(s) of sentence {} (first: '{}'); left out",
                  m.config.model_path, ids.missing.size(), number, ids.missing.front());
    }
    const bool ends_sentence = !(split_at > 0 && i == 0);
    s.sentences_.push_back({sentences[i], std::move(ids.ids), std::move(ids.missing), ends_sentence});
  }
  return s;
}

bool PiperTts::next(PiperSynthesis& s, PiperChunk& chunk) {
  Impl& m = *impl_;
  if (s.ready_.empty()) {
    if (s.next_ >= s.sentences_.size()) return false;
    // A batch: the next sentence and the following ones of similar length.
    std::size_t count = 1;
    const std::size_t first_len = s.sentences_[s.next_].ids.size();
    while (count < static_cast<std::size_t>(m.config.max_batch) && s.next_ + count < s.sentences_.size()) {
      const std::size_t len = s.sentences_[s.next_ + count].ids.size();
      const double ratio = static_cast<double>(std::min(len, first_len)) / static_cast<double>(std::max(len, first_len));
      if (ratio < kBatchLengthRatio) break;
      ++count;
    }
    std::vector<std::vector<std::int64_t>> ids;
    for (std::size_t k = 0; k < count; ++k) ids.push_back(s.sentences_[s.next_ + k].ids);
    std::vector<std::vector<float>> audio(count);
    m.vits.run(ids, s.scales_, s.speaker_id_, audio);
    for (std::size_t k = 0; k < count; ++k) {
      const auto index = s.next_ + k;
      auto& sentence = s.sentences_[index];
      PiperChunk c;
      finish_audio(audio[k], s.normalize_, s.volume_);
      if (s.output_rate_hz_ != m.voice.sample_rate_hz) {
        c.samples = resample(audio[k], m.voice.sample_rate_hz, s.output_rate_hz_);
        for (float& x : c.samples) x = std::clamp(x, -1.0f, 1.0f);  // the filter can overshoot a peak of 1
      } else {
        c.samples = std::move(audio[k]);
      }
      c.sample_rate_hz = s.output_rate_hz_;
      c.sentence_index = index;
      c.sentence_count = s.sentences_.size();
      c.last = index + 1 == s.sentences_.size();
      c.ends_sentence = sentence.ends_sentence;
      c.phonemes = std::move(sentence.phonemes);
      c.phoneme_ids = std::move(sentence.ids);
      c.missing_phonemes = std::move(sentence.missing);
      s.ready_.push_back(std::move(c));
    }
    s.next_ += count;
  }
  chunk = std::move(s.ready_.front());
  s.ready_.pop_front();
  return true;
}

std::vector<std::int16_t> piper_to_int16(const std::vector<float>& samples) {
  std::vector<std::int16_t> out(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    out[i] = float_to_s16(samples[i]);
  }
  return out;
}

}  // namespace brisvox
