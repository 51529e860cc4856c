#include "brisvox/models/stt/whisper_search.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string_view>

#include "brisvox/error.h"
#include "brisvox/models/stt/whisper_vocabulary.h"
#include "models/stt/whisper/softmax_sum.h"

namespace brisvox {
namespace {

// Python's str.strip() for ASCII whitespace (what a prompt is cut of before encoding).
std::string_view strip_ascii_space(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr double kTimestampSeconds = 0.02;  // one timestamp token
constexpr float kMaxTemperature = 10.0f;
constexpr int kMaxBeams = 16;

void suppress_range(std::span<float> logits, int begin, int end) {
  const int n = static_cast<int>(logits.size());
  begin = std::max(begin, 0);
  end = std::min(end, n);
  for (int i = begin; i < end; ++i) logits[static_cast<std::size_t>(i)] = kNegInf;
}

}  // namespace

void WhisperSearch::add_context(const WhisperVocabulary* vocabulary) {
  if (options_.prompt.empty() && options_.hotwords.empty()) return;
  if (vocabulary == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "Whisper: a prompt or hotwords need the model's vocabulary to be encoded");
  }
  // faster-whisper's get_prompt: <|startofprev|>, the hotwords, then the previous text (here the
  // initial prompt), each encoded as " " + text.strip().
  const int limit = config_.dims.n_text_ctx / 2 - 1;  // 223: faster-whisper's cap on each part
  prompt_.push_back(config_.tokens.sot_prev);
  for (const auto& [what, text] : {std::pair<const char*, const std::string*>{"hotwords", &options_.hotwords},
                                   std::pair<const char*, const std::string*>{"prompt", &options_.prompt}}) {
    const std::string_view stripped = strip_ascii_space(*text);
    if (stripped.empty()) continue;
    for (std::size_t i = 0; i < stripped.size(); ++i) {
      const auto c = static_cast<unsigned char>(stripped[i]);
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("Whisper: the {} hold a control character (byte 0x{:02x} at {}): give plain text", what,
                                c, i));
      }
    }
    const std::vector<int> ids = vocabulary->encode(" " + std::string(stripped));
    if (static_cast<int>(ids.size()) > limit) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("Whisper: the {} are {} tokens long; Whisper takes at most {} (about {} words): shorten "
                              "them",
                              what, ids.size(), limit, limit * 3 / 4));
    }
    prompt_.insert(prompt_.end(), ids.begin(), ids.end());
  }
}

WhisperSearch::WhisperSearch(const WhisperConfig& config, const WhisperDecodeOptions& options,
                             const WhisperVocabulary* vocabulary)
    : config_(config), options_(options) {
  const WhisperSpecialTokens& t = config_.tokens;
  const int n_vocab = config_.dims.n_vocab;
  add_context(vocabulary);
  sot_index_ = static_cast<int>(prompt_.size());
  prompt_.push_back(t.sot);
  if (options_.language == "auto") options_.language.clear();
  if (config_.multilingual) {
    if (options_.language.empty()) {
      if (config_.languages.empty()) {
        throw Error(ErrorCode::kInvalidArgument,
                    "Whisper: this multilingual model lists no language tokens, so a language must be given");
      }
      detect_ = true;
      language_index_ = static_cast<int>(prompt_.size());
      prompt_.push_back(config_.languages.front().token);  // replaced by each sequence's detection
    } else {
      language_ = config_.language_token(options_.language);
      if (language_ < 0) {
        std::string codes;
        for (const auto& l : config_.languages) codes += (codes.empty() ? "" : ",") + l.code;
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("Whisper: unknown language '{}' (the model has: {})", options_.language, codes));
      }
      language_index_ = static_cast<int>(prompt_.size());
      prompt_.push_back(language_);
    }
    prompt_.push_back(options_.task == WhisperTask::kTranslate ? t.translate : t.transcribe);
  } else {
    if (!options_.language.empty() && options_.language != "en") {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("Whisper: this model is English-only; language '{}' is not available", options_.language));
    }
    if (options_.task == WhisperTask::kTranslate) {
      throw Error(ErrorCode::kInvalidArgument, "Whisper: an English-only model cannot translate");
    }
  }
  if (!options_.timestamps) prompt_.push_back(t.no_timestamps);

  // faster-whisper's get_suppressed_tokens: -1 expands to the model's list; any non-empty list
  // also suppresses the task and start tokens; an empty list suppresses nothing.
  if (!options_.suppress_tokens.empty()) {
    for (int id : options_.suppress_tokens) {
      if (id == -1) {
        suppress_.insert(suppress_.end(), config_.suppress_tokens.begin(), config_.suppress_tokens.end());
      } else if (id < 0 || id >= n_vocab) {
        throw Error(ErrorCode::kInvalidArgument,
                    fmt::format("Whisper: suppress_tokens holds {}, outside the vocabulary [0, {}) (-1 = the default list)",
                                id, n_vocab));
      } else {
        suppress_.push_back(id);
      }
    }
    suppress_.insert(suppress_.end(), {t.transcribe, t.translate, t.sot, t.sot_prev, t.sot_lm, t.no_speech});
    std::sort(suppress_.begin(), suppress_.end());
    suppress_.erase(std::unique(suppress_.begin(), suppress_.end()), suppress_.end());
  }
  if (options_.suppress_blank) suppress_first_ = config_.suppress_blank;

  const int prompt_len = static_cast<int>(prompt_.size());
  const int n_ctx = config_.dims.n_text_ctx;
  if (options_.max_new_tokens < 0) {
    throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper: max_new_tokens is {}", options_.max_new_tokens));
  }
  if (prompt_len >= n_ctx) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: the prompt and hotwords make a prompt of {} tokens, the model has {} positions: "
                            "shorten them",
                            prompt_len, n_ctx));
  }
  if (options_.max_new_tokens == 0) {
    // CTranslate2's Whisper generate: min(max_length / 2, max_length - start_step), max_length =
    // n_text_ctx, start_step = the prompt tokens before the last one.
    max_new_tokens_ = std::min(n_ctx / 2, n_ctx - (prompt_len - 1));
  } else {
    max_new_tokens_ = options_.max_new_tokens;
    if (prompt_len + max_new_tokens_ - 1 > n_ctx) {
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("Whisper: a prompt of {} tokens and max_new_tokens {} exceed the model's {} positions",
                              prompt_len, max_new_tokens_, n_ctx));
    }
  }
  if (!(options_.max_initial_timestamp_s >= 0.0f)) {
    throw Error(ErrorCode::kInvalidArgument, "Whisper: max_initial_timestamp_s must be >= 0");
  }
  max_initial_timestamp_ =
      t.timestamp_begin + static_cast<int>(std::lround(options_.max_initial_timestamp_s / kTimestampSeconds));
  if (!(options_.temperature >= 0.0f && options_.temperature <= kMaxTemperature)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: temperature must be 0 to {}, got {}", kMaxTemperature, options_.temperature));
  }
  if (options_.beam_size < 1 || options_.beam_size > kMaxBeams) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: beam size must be 1 to {}, got {}", kMaxBeams, options_.beam_size));
  }
  if (options_.best_of < 1 || options_.best_of > kMaxBeams) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: best_of must be 1 to {}, got {}", kMaxBeams, options_.best_of));
  }
  if (!(options_.patience > 0.0f) || std::lround(static_cast<float>(options_.beam_size) * options_.patience) < 1 ||
      options_.patience > static_cast<float>(kMaxBeams)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: patience must be > 0 and at most {}, got {}", kMaxBeams, options_.patience));
  }
  if (!(options_.length_penalty >= 0.0f && options_.length_penalty <= 10.0f)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: length_penalty must be 0 to 10, got {}", options_.length_penalty));
  }
}

WhisperSequence::WhisperSequence(const WhisperSearch& search) : search_(&search) {
  tokens_.reserve(static_cast<std::size_t>(search.max_new_tokens_));
  if (search.detect_) language_probs_.reserve(search.config_.languages.size());
  reset();
}

std::string_view WhisperSequence::language() const {
  const WhisperConfig& config = search_->config_;
  if (!config.multilingual) return "en";
  for (const auto& l : config.languages) {
    if (l.token == language_token_) return l.code;
  }
  return {};
}

void WhisperSequence::set_language(int token, float probability) {
  const WhisperConfig& config = search_->config_;
  if (!config.multilingual) {
    throw Error(ErrorCode::kInvalidArgument, "Whisper: an English-only model takes no language token");
  }
  const bool known = std::any_of(config.languages.begin(), config.languages.end(),
                                 [&](const WhisperLanguage& l) { return l.token == token; });
  if (!known) throw Error(ErrorCode::kInvalidArgument, fmt::format("Whisper: token {} is not a language", token));
  if (prompt_index_ > search_->language_index_) {
    throw Error(ErrorCode::kClosed, "Whisper: the sequence's language was already fed");
  }
  language_token_ = token;
  language_probability_ = probability;
  language_probs_.clear();
  if (prompt_index_ == search_->language_index_) next_ = token;
  if (detect_step_) {  // no detection of its own now
    detect_step_ = false;
    next_ = search_->prompt_.front();
  }
}

void WhisperSequence::reset() {
  tokens_.clear();
  prompt_index_ = 0;
  next_ = search_->prompt_.front();
  // With a context before <|startoftranscript|>, the language is detected on <|startoftranscript|>
  // alone first, as faster-whisper detects it (its detect_language sees no prompt); the lane then
  // rewinds to position 0 for the prompt.
  detect_step_ = search_->detect_ && search_->sot_index_ > 0;
  if (detect_step_) next_ = search_->config_.tokens.sot;
  rewind_ = false;
  position_ = 0;
  done_ = false;
  hit_limit_ = false;
  sum_logprob_ = 0.0;
  no_speech_prob_ = 0.0f;
  language_token_ = search_->language_;
  language_probability_ = 1.0f;
  language_probs_.clear();
}

double WhisperSequence::avg_logprob() const {
  return sum_logprob_ / static_cast<double>(tokens_.size() + 1);
}

bool whisper_no_speech(float no_speech_prob, double avg_logprob, const WhisperDecodeOptions& o) noexcept {
  return no_speech_prob > o.no_speech_threshold && !(avg_logprob > o.log_prob_threshold);
}

bool WhisperSequence::no_speech() const { return whisper_no_speech(no_speech_prob_, avg_logprob(), search_->options_); }

void WhisperSequence::consume(std::span<float> logits) {
  if (done_) return;
  if (advance(logits)) return;
  sample(logits);
}

bool WhisperSequence::advance(std::span<const float> logits) {
  const WhisperConfig& config = search_->config_;
  if (logits.size() != static_cast<std::size_t>(config.dims.n_vocab)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper search: {} logits, the model has {} tokens", logits.size(), config.dims.n_vocab));
  }
  const auto& prompt = search_->prompt_;
  ++position_;
  rewind_ = false;
  if (detect_step_) {
    detect_language(logits);
    detect_step_ = false;
    rewind_ = true;
    position_ = 0;
    next_ = prompt.front();
    return true;
  }
  if (prompt_index_ < static_cast<int>(prompt.size())) {
    if (prompt_index_ == search_->sot_index_) {
      // Whisper's no-speech probability: softmax of the raw logits after <|startoftranscript|>.
      float max = kNegInf;
      for (float x : logits) max = std::max(max, x);
      const double sum = whisper_detail::sum_exp_below(logits, max);
      const double p = std::exp(static_cast<double>(logits[static_cast<std::size_t>(config.tokens.no_speech)]) - max) / sum;
      no_speech_prob_ = static_cast<float>(p);
      if (search_->detect_ && language_token_ < 0) detect_language(logits);
    }
    if (++prompt_index_ < static_cast<int>(prompt.size())) {
      next_ = prompt_index_ == search_->language_index_ ? language_token_ : prompt[static_cast<std::size_t>(prompt_index_)];
      return true;
    }
  }
  return false;
}

void WhisperSequence::detect_language(std::span<const float> logits) {
  // CTranslate2: the language tokens' logits gathered, softmax over them, the most probable one
  // (the first on a tie).
  const auto& languages = search_->config_.languages;
  float max = kNegInf;
  for (const auto& l : languages) max = std::max(max, logits[static_cast<std::size_t>(l.token)]);
  if (!std::isfinite(max)) {
    throw Error(ErrorCode::kRuntime, "Whisper decoder produced no finite logit for a language token (a broken model?)");
  }
  double sum = 0.0;
  for (const auto& l : languages) sum += std::exp(static_cast<double>(logits[static_cast<std::size_t>(l.token)]) - max);
  language_probs_.clear();
  std::size_t best = 0;
  for (std::size_t i = 0; i < languages.size(); ++i) {
    const double p = std::exp(static_cast<double>(logits[static_cast<std::size_t>(languages[i].token)]) - max) / sum;
    language_probs_.push_back(static_cast<float>(p));
    if (language_probs_[i] > language_probs_[best]) best = i;
  }
  language_token_ = languages[best].token;
  language_probability_ = language_probs_[best];
}

void WhisperSequence::apply_timestamp_rules(std::span<float> logits) const {
  const WhisperSpecialTokens& t = search_->config_.tokens;
  const int n_vocab = static_cast<int>(logits.size());
  const int ts_begin = t.timestamp_begin;
  logits[static_cast<std::size_t>(t.no_timestamps)] = kNegInf;
  const std::size_t n = tokens_.size();
  bool check_timestamp_mass = false;
  if (n == 0) {
    suppress_range(logits, 0, ts_begin);                                   // a timestamp first,
    suppress_range(logits, search_->max_initial_timestamp_ + 1, n_vocab);  // and an early one
  } else {
    const int last = tokens_[n - 1];
    if (last >= ts_begin) {
      const int penultimate = n >= 2 ? tokens_[n - 2] : last;
      if (penultimate >= ts_begin) {
        suppress_range(logits, ts_begin, n_vocab);  // a pair is complete: text (or eot) next
      } else {
        suppress_range(logits, 0, t.eot);        // an opening timestamp: no text before its
        suppress_range(logits, ts_begin, last);  // closing one, which may not go back in time
        check_timestamp_mass = true;
      }
    } else {
      check_timestamp_mass = true;
      for (std::size_t k = n; k-- > 0;) {
        if (tokens_[k] >= ts_begin) {
          suppress_range(logits, ts_begin, tokens_[k] + 1);  // timestamps never decrease
          break;
        }
      }
    }
  }
  if (check_timestamp_mass) {
    // If the timestamps' total probability beats every single text token, sample a timestamp
    // (the log-softmax shift is common to both sides, so raw logits compare the same).
    float text_max = kNegInf;
    for (int i = 0; i < ts_begin; ++i) text_max = std::max(text_max, logits[static_cast<std::size_t>(i)]);
    float ts_max = kNegInf;
    for (int i = ts_begin; i < n_vocab; ++i) ts_max = std::max(ts_max, logits[static_cast<std::size_t>(i)]);
    if (ts_max > kNegInf) {
      double sum = 0.0;
      for (int i = ts_begin; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[static_cast<std::size_t>(i)]) - ts_max);
      const double ts_logsumexp = ts_max + std::log(sum);
      if (ts_logsumexp > text_max) suppress_range(logits, 0, ts_begin);
    }
  }
}

void WhisperSequence::mask(std::span<float> logits) const {
  for (int id : search_->suppress_) logits[static_cast<std::size_t>(id)] = kNegInf;
  if (tokens_.empty()) {
    for (int id : search_->suppress_first_) logits[static_cast<std::size_t>(id)] = kNegInf;
  }
  if (search_->options_.timestamps) apply_timestamp_rules(logits);
}

void WhisperSequence::sample(std::span<float> logits) {
  mask(logits);
  double logprob = 0.0;
  const int token = choose(logits, logprob);
  sum_logprob_ += logprob;
  append(token);
}

int WhisperSequence::choose(std::span<const float> logits, double& logprob) {
  // The highest logit (the lowest id on a tie); NaN never wins.
  std::size_t best = logits.size();
  float max = kNegInf;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > max) {
      max = logits[i];
      best = i;
    }
  }
  if (best == logits.size() || !std::isfinite(max)) {
    throw Error(ErrorCode::kRuntime, "Whisper decoder produced no finite logit for an allowed token (a broken model?)");
  }
  const double log_sum = std::log(whisper_detail::sum_exp_below(logits, max));
  if (tokens_.size() < forced_.size()) {
    const int token = forced_[tokens_.size()];
    if (token >= 0 && static_cast<std::size_t>(token) < logits.size() && logits[static_cast<std::size_t>(token)] > kNegInf) {
      logprob = static_cast<double>(logits[static_cast<std::size_t>(token)]) - max - log_sum;
      return token;
    }
    forced_ = {};  // a token the rules forbid here: the rest is chosen
  }
  const float temperature = search_->options_.temperature;
  if (temperature > 0.0f) {
    // softmax(logits / T): draw u in [0, total) and walk the cumulative sum; masked tokens weigh 0.
    const double inv_t = 1.0 / static_cast<double>(temperature);
    double total = 0.0;
    for (float x : logits) {
      if (x > kNegInf) total += std::exp((static_cast<double>(x) - max) * inv_t);
    }
    const double u = std::uniform_real_distribution<double>(0.0, total)(rng_);
    double acc = 0.0;
    for (std::size_t i = 0; i < logits.size(); ++i) {
      if (!(logits[i] > kNegInf)) continue;
      acc += std::exp((static_cast<double>(logits[i]) - max) * inv_t);
      best = i;
      if (acc > u) break;
    }
  }
  logprob = static_cast<double>(logits[best]) - max - log_sum;  // log_softmax(logits)[best]
  return static_cast<int>(best);
}

void WhisperSequence::append(int token) {
  if (token == search_->config_.tokens.eot) {
    done_ = true;
    return;
  }
  tokens_.push_back(token);
  if (static_cast<int>(tokens_.size()) >= search_->max_new_tokens_) {
    done_ = true;
    hit_limit_ = true;
    return;
  }
  next_ = token;
}

void WhisperSequence::extend(const WhisperSequence& parent, int token, double sum_logprob) {
  tokens_.assign(parent.tokens_.begin(), parent.tokens_.end());  // within the reserved capacity
  prompt_index_ = parent.prompt_index_;
  position_ = parent.position_;
  detect_step_ = false;
  rewind_ = false;
  done_ = false;
  hit_limit_ = false;
  no_speech_prob_ = parent.no_speech_prob_;
  language_token_ = parent.language_token_;
  language_probability_ = parent.language_probability_;
  language_probs_.assign(parent.language_probs_.begin(), parent.language_probs_.end());
  forced_ = parent.forced_;
  sum_logprob_ = sum_logprob;
  append(token);
}

}  // namespace brisvox
