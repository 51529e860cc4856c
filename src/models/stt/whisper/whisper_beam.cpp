#include "brisvox/models/stt/whisper_beam.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "brisvox/error.h"
#include "models/stt/whisper/softmax_sum.h"

namespace brisvox {
namespace {
constexpr float kNoLogit = -std::numeric_limits<float>::infinity();
}  // namespace

WhisperBeamSearch::WhisperBeamSearch(const WhisperSearch& search) : search_(&search) {
  const WhisperDecodeOptions& o = search.options();
  sampling_ = o.temperature > 0.0f;
  const int slots = o.width();
  const int n_vocab = search.config().dims.n_vocab;
  if (!sampling_ && 2 * slots > n_vocab) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper: beam size {} needs at least {} tokens, the model has {}", slots, 2 * slots, n_vocab));
  }
  max_finished_ = sampling_ ? slots : static_cast<int>(std::lround(static_cast<float>(slots) * o.patience));
  live_.reserve(static_cast<std::size_t>(slots));
  next_.reserve(static_cast<std::size_t>(slots));
  for (int s = 0; s < slots; ++s) {
    live_.emplace_back(search);
    next_.emplace_back(search);
  }
  holds_audio_.assign(static_cast<std::size_t>(slots), 0);
  claimed_.assign(static_cast<std::size_t>(slots), 0);
  finished_.resize(static_cast<std::size_t>(max_finished_ + slots));
  for (auto& h : finished_) h.tokens.reserve(static_cast<std::size_t>(search.max_new_tokens()));
  candidates_.reserve(static_cast<std::size_t>(2 * slots));
  copies_.reserve(static_cast<std::size_t>(slots));
  reset();
}

void WhisperBeamSearch::reset() {
  for (std::size_t s = 0; s < live_.size(); ++s) {
    live_[s].reset();
    live_[s].seed(s);
    next_[s].seed(s + live_.size());
  }
  std::fill(holds_audio_.begin(), holds_audio_.end(), 0);
  holds_audio_.front() = 1;
  finished_count_ = 0;
  copies_.clear();
  width_ = 1;
  steps_ = 0;
  done_ = false;
  best_ = 0;
}

double WhisperBeamSearch::avg_logprob() const {
  return best().sum_logprob / static_cast<double>(best().tokens.size() + 1);
}

bool WhisperBeamSearch::no_speech() const {
  return whisper_no_speech(no_speech_prob(), avg_logprob(), search_->options());
}

void WhisperBeamSearch::consume(std::span<const std::span<float>> logits) {
  if (done_) return;
  if (logits.size() < static_cast<std::size_t>(width_)) {
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("Whisper search: logits for {} sequences, {} are live", logits.size(), width_));
  }
  copies_.clear();
  const bool first_step = width_ == 1;
  if (first_step && live_.front().advance(logits.front())) return;  // still in the prompt
  if (sampling_ || slots() == 1) {  // one sequence at temperature 0: the greedy search
    sample_step(logits, first_step);
  } else {
    beam_step(logits, first_step);
  }
}

void WhisperBeamSearch::finish(const WhisperSequence& parent, int token, double sum_logprob, bool hit_limit) {
  Hypothesis& h = finished_[finished_count_++];
  h.tokens.assign(parent.tokens_.begin(), parent.tokens_.end());
  if (token != search_->config().tokens.eot) h.tokens.push_back(token);
  h.sum_logprob = sum_logprob;
  h.hit_limit = hit_limit;
  const double penalty = search_->options().length_penalty;
  const auto length = static_cast<double>(h.tokens.size());
  // CTranslate2's score / length^penalty; an empty hypothesis ranks last.
  h.score = penalty == 0.0 ? sum_logprob
            : length == 0.0 ? -std::numeric_limits<double>::infinity()
                            : sum_logprob / std::pow(length, penalty);
}

void WhisperBeamSearch::beam_step(std::span<const std::span<float>> logits, bool first_step) {
  const std::size_t n_candidates = 2 * live_.size();
  candidates_.clear();
  for (int s = 0; s < width_; ++s) {
    WhisperSequence& seq = live_[static_cast<std::size_t>(s)];
    const std::span<float> x = logits[static_cast<std::size_t>(s)];
    if (!first_step) seq.advance(x);
    seq.mask(x);
    float max = kNoLogit;
    for (float v : x) max = std::max(max, v);
    if (!std::isfinite(max)) {
      throw Error(ErrorCode::kRuntime, "Whisper decoder produced no finite logit for an allowed token (a broken model?)");
    }
    // log_softmax + the hypothesis's sum, in float as CTranslate2 adds them.
    const float shift = max + static_cast<float>(std::log(whisper_detail::sum_exp_below(x, max)));
    const auto base = static_cast<float>(seq.sum_logprob_);
    for (std::size_t v = 0; v < x.size(); ++v) {
      if (!(x[v] > kNoLogit)) continue;
      const float score = base + (x[v] - shift);
      if (candidates_.size() == n_candidates && !(score > candidates_.back().score)) continue;
      // After every candidate at least as good: an earlier (slot, token) wins a tie.
      auto at = std::upper_bound(candidates_.begin(), candidates_.end(), score,
                                 [](float a, const Candidate& c) { return a > c.score; });
      if (candidates_.size() == n_candidates) candidates_.pop_back();
      candidates_.insert(at, Candidate{score, s, static_cast<int>(v)});
    }
  }
  const int beam = slots();
  if (candidates_.size() < static_cast<std::size_t>(beam)) {
    throw Error(ErrorCode::kRuntime, "Whisper decoder allowed fewer tokens than the beam size (a broken model?)");
  }
  const int eot = search_->config().tokens.eot;
  const bool last = steps_ + 1 == search_->max_new_tokens();
  ++steps_;
  // CTranslate2: of the first beam_size candidates, a finished one hands its place to the next
  // unfinished candidate beyond them.
  Candidate chosen[32];
  std::size_t secondary = static_cast<std::size_t>(beam);
  for (int k = 0; k < beam; ++k) {
    const Candidate& c = candidates_[static_cast<std::size_t>(k)];
    std::size_t next = static_cast<std::size_t>(k);
    if (c.token == eot || last) {
      finish(live_[static_cast<std::size_t>(c.slot)], c.token, c.score, c.token != eot);
      for (std::size_t j = secondary; j < candidates_.size(); ++j) {
        if (candidates_[j].token != eot) {
          next = j;
          secondary = j + 1;
          break;
        }
      }
    }
    chosen[k] = candidates_[next];
  }
  if (last || finished_count_ >= static_cast<std::size_t>(max_finished_)) {
    conclude();
    return;
  }
  place(std::span<const Candidate>(chosen, static_cast<std::size_t>(beam)));
}

void WhisperBeamSearch::place(std::span<const Candidate> chosen) {
  std::fill(claimed_.begin(), claimed_.end(), 0);
  int slot_of[32];
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    const auto p = static_cast<std::size_t>(chosen[k].slot);
    slot_of[k] = claimed_[p] ? -1 : chosen[k].slot;
    claimed_[p] = 1;
  }
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    if (slot_of[k] >= 0) continue;
    std::size_t u = 0;
    while (claimed_[u]) ++u;  // chosen.size() == slots(): a free one exists
    claimed_[u] = 1;
    slot_of[k] = static_cast<int>(u);
    copies_.push_back({chosen[k].slot, static_cast<int>(u), holds_audio_[u] == 0});
    holds_audio_[u] = 1;
  }
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    next_[static_cast<std::size_t>(slot_of[k])].extend(live_[static_cast<std::size_t>(chosen[k].slot)], chosen[k].token,
                                                       chosen[k].score);
  }
  live_.swap(next_);
  width_ = slots();
}

void WhisperBeamSearch::sample_step(std::span<const std::span<float>> logits, bool first_step) {
  if (first_step) {
    // best_of draws from the prompt's distribution, one per slot.
    WhisperSequence& prompt = live_.front();
    const std::span<float> x = logits.front();
    prompt.mask(x);
    for (std::size_t s = 0; s < live_.size(); ++s) {
      double logprob = 0.0;
      const int token = live_[s].choose(x, logprob);
      next_[s].extend(prompt, token, prompt.sum_logprob_ + logprob);
      if (s > 0) copies_.push_back({0, static_cast<int>(s), holds_audio_[s] == 0});
      holds_audio_[s] = 1;
    }
    live_.swap(next_);
    width_ = slots();
    for (const auto& seq : live_) {
      if (seq.done()) finish(seq, search_->config().tokens.eot, seq.sum_logprob_, seq.hit_limit_);
    }
  } else {
    for (std::size_t s = 0; s < live_.size(); ++s) {
      WhisperSequence& seq = live_[s];
      if (seq.done()) continue;
      seq.consume(logits[s]);
      if (seq.done()) finish(seq, search_->config().tokens.eot, seq.sum_logprob_, seq.hit_limit_);
    }
  }
  ++steps_;
  if (finished_count_ == live_.size()) conclude();
}

void WhisperBeamSearch::conclude() {
  best_ = 0;
  for (std::size_t i = 1; i < finished_count_; ++i) {
    if (finished_[i].score > finished_[static_cast<std::size_t>(best_)].score) best_ = static_cast<int>(i);
  }
  done_ = true;
}

}  // namespace brisvox
