// Beam search and best-of sampling (whisper_beam.h) on a simulated decoder: no ONNX Runtime. The
// simulated decoder's logits are a fixed function of the tokens a lane was fed, so a lane copy
// that went wrong shows as a result whose log-probability is not its tokens' own.
#include "brisvox/models/stt/whisper_beam.h"
#include "brisvox/models/stt/whisper_fallback.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <set>
#include <vector>

#include "brisvox/error.h"
#include "toy_whisper.h"

namespace brisvox {
namespace {

using namespace toy;  // the toy configuration (toy_whisper.h), English-only here

WhisperConfig config() { return toy::config(false); }

// The simulated decoder: logits of a prefix (every token fed so far, the prompt's included).
// Pseudo-random per (prefix, token) in [-3, 3]; <|endoftext|> grows likelier with length, so that
// hypotheses end at different lengths.
std::vector<float> logits_of(const std::vector<int>& prefix, std::uint64_t salt) {
  std::uint64_t h = 1469598103934665603ull ^ salt;
  for (int t : prefix) h = (h ^ static_cast<std::uint64_t>(t + 1)) * 1099511628211ull;
  std::vector<float> l(kVocab);
  for (int v = 0; v < kVocab; ++v) {
    std::uint64_t x = (h ^ static_cast<std::uint64_t>(v) * 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
    x ^= x >> 31;
    l[static_cast<std::size_t>(v)] = static_cast<float>(static_cast<double>(x % 6001) / 1000.0 - 3.0);
  }
  l[kEot] += 0.6f * static_cast<float>(prefix.size()) - 2.0f;
  return l;
}

// What a simulated search reports, with the tokens its result's lane was fed.
struct Decoded {
  std::vector<int> tokens;
  double sum_logprob = 0.0;
  bool hit_limit = false;
  int steps = 0;
  int copies = 0;
};

// Drives `search` as a transcriber drives it: lanes hold what they were fed, copies copy them.
Decoded drive(WhisperBeamSearch& search, std::uint64_t salt) {
  std::vector<std::vector<int>> lanes(static_cast<std::size_t>(search.slots()));
  std::vector<std::vector<float>> logits(lanes.size());
  std::vector<std::span<float>> views(lanes.size());
  Decoded r;
  while (!search.done()) {
    for (int k = 0; k < search.width(); ++k) {
      auto& lane = lanes[static_cast<std::size_t>(k)];
      lane.push_back(search.next_token(k));
      logits[static_cast<std::size_t>(k)] = logits_of(lane, salt);
      views[static_cast<std::size_t>(k)] = logits[static_cast<std::size_t>(k)];
    }
    search.consume(std::span<const std::span<float>>(views.data(), static_cast<std::size_t>(search.width())));
    for (const WhisperLaneCopy& c : search.copies()) {
      EXPECT_NE(c.from, c.to);
      lanes[static_cast<std::size_t>(c.to)] = lanes[static_cast<std::size_t>(c.from)];
      ++r.copies;
    }
    ++r.steps;
  }
  r.tokens.assign(search.tokens().begin(), search.tokens().end());
  r.sum_logprob = search.sum_logprob();
  r.hit_limit = search.hit_token_limit();
  return r;
}

// The log-probability of `tokens` (then <|endoftext|> unless at the limit) under the simulated
// decoder, with the search's own masks: suppressed tokens, and " "/<|endoftext|> first.
double score_of(const WhisperSearch& s, const std::vector<int>& tokens, bool hit_limit, std::uint64_t salt) {
  std::vector<int> prefix(s.prompt().begin(), s.prompt().end());
  double sum = 0.0;
  for (std::size_t i = 0; i <= tokens.size(); ++i) {
    if (i == tokens.size() && hit_limit) break;
    const int next = i < tokens.size() ? tokens[i] : kEot;
    std::vector<float> l = logits_of(prefix, salt);
    for (int id : config().suppress_tokens) l[static_cast<std::size_t>(id)] = -INFINITY;
    if (i == 0) {
      l[kBlank] = -INFINITY;
      l[kEot] = -INFINITY;
    }
    double z = 0.0;
    for (float x : l) z += std::exp(static_cast<double>(x));
    sum += static_cast<double>(l[static_cast<std::size_t>(next)]) - std::log(z);
    prefix.push_back(next);
  }
  return sum;
}

WhisperDecodeOptions beam(int size) {
  WhisperDecodeOptions o;
  o.beam_size = size;
  o.max_new_tokens = 12;
  return o;
}

TEST(WhisperBeamSearch, BeamOneIsTheGreedySearch) {
  for (std::uint64_t salt = 0; salt < 20; ++salt) {
    const WhisperSearch s(config(), beam(1));
    WhisperBeamSearch b(s);
    const Decoded r = drive(b, salt);
    WhisperSequence greedy(s);
    std::vector<int> prefix;
    while (!greedy.done()) {
      prefix.push_back(greedy.next_token());
      std::vector<float> l = logits_of(prefix, salt);
      greedy.consume(l);
    }
    EXPECT_EQ(r.tokens, std::vector<int>(greedy.tokens().begin(), greedy.tokens().end())) << salt;
    EXPECT_DOUBLE_EQ(r.sum_logprob, greedy.sum_logprob()) << salt;
    EXPECT_EQ(r.copies, 0);
  }
}

TEST(WhisperBeamSearch, EachResultIsScoredOnItsOwnTokensWhateverTheLanesWentThrough) {
  int copies = 0;
  int better = 0;
  int worse = 0;
  for (std::uint64_t salt = 0; salt < 40; ++salt) {
    const WhisperSearch s(config(), beam(5));
    WhisperBeamSearch b(s);
    const Decoded r = drive(b, salt);
    copies += r.copies;
    // The copies kept every lane's history right: the result's sum is its own tokens'.
    EXPECT_NEAR(r.sum_logprob, score_of(s, r.tokens, r.hit_limit, salt), 2e-4) << salt;
    const WhisperSearch g(config(), beam(1));
    WhisperBeamSearch greedy(g);
    const Decoded gr = drive(greedy, salt);
    const auto mean = [](const Decoded& x) {
      return x.sum_logprob / static_cast<double>(std::max<std::size_t>(1, x.tokens.size()));
    };
    better += mean(r) > mean(gr) + 1e-6;
    worse += mean(r) < mean(gr) - 1e-6;
  }
  std::printf("beam 5 against greedy on 40 simulated decoders: better %d, worse %d, lane copies %d\n", better, worse,
              copies);
  EXPECT_GT(copies, 40);       // hypotheses did move between lanes
  EXPECT_GT(better, 4 * worse);  // and the beam's ranking (length penalty 1) mostly beats greedy's
}

TEST(WhisperBeamSearch, TheFirstExpansionCopiesTheAudioAndLaterOnesOnlyTheTokens) {
  const WhisperSearch s(config(), beam(3));
  WhisperBeamSearch b(s);
  std::vector<float> l = logits_of({kSot}, 1);
  std::span<float> view(l);
  b.consume(std::span<const std::span<float>>(&view, 1));  // <|startoftranscript|>: still the prompt
  EXPECT_EQ(b.width(), 1);
  EXPECT_TRUE(b.copies().empty());
  l = logits_of({kSot, kNoTimestamps}, 1);
  view = l;
  b.consume(std::span<const std::span<float>>(&view, 1));  // the first sampled step: three hypotheses
  ASSERT_EQ(b.width(), 3);
  ASSERT_EQ(b.copies().size(), 2u);
  for (const WhisperLaneCopy& c : b.copies()) {
    EXPECT_EQ(c.from, 0);
    EXPECT_TRUE(c.audio);
  }
  std::vector<std::vector<float>> all(3);
  std::vector<std::span<float>> views(3);
  for (int step = 0; step < 8 && !b.done(); ++step) {
    for (std::size_t k = 0; k < 3; ++k) {
      all[k] = logits_of({kSot, kNoTimestamps, b.next_token(static_cast<int>(k)), step}, 7 + k);
      views[k] = all[k];
    }
    b.consume(views);
    for (const WhisperLaneCopy& c : b.copies()) EXPECT_FALSE(c.audio);
  }
}

TEST(WhisperBeamSearch, StopsAtTheTokenLimitAndSaysSo) {
  WhisperDecodeOptions o = beam(2);
  o.max_new_tokens = 3;
  const WhisperSearch s(config(), o);
  WhisperBeamSearch b(s);
  // A decoder that never favours <|endoftext|>.
  std::vector<std::vector<float>> all(2, std::vector<float>(kVocab, 0.0f));
  std::vector<std::span<float>> views(2);
  int steps = 0;
  while (!b.done()) {
    for (std::size_t k = 0; k < 2; ++k) {
      all[k].assign(kVocab, 0.0f);
      all[k][kEot] = -20.0f;
      all[k][5] = 1.0f;
      views[k] = all[k];
    }
    b.consume(std::span<const std::span<float>>(views.data(), static_cast<std::size_t>(b.width())));
    ++steps;
  }
  EXPECT_EQ(steps, 1 + 3);  // <|startoftranscript|>, then the last prompt token's logits and two more sample three
  EXPECT_TRUE(b.hit_token_limit());
  EXPECT_EQ(std::vector<int>(b.tokens().begin(), b.tokens().end()), (std::vector<int>{5, 5, 5}));
}

TEST(WhisperBeamSearch, SamplingIsSeededPerSlotAndNearZeroTemperatureIsGreedy) {
  WhisperDecodeOptions o = beam(1);
  o.temperature = 1e-4f;  // the simulated logits are 0.001 apart at least
  o.best_of = 4;
  const WhisperSearch cold(config(), o);
  const WhisperSearch g(config(), beam(1));
  for (std::uint64_t salt = 0; salt < 10; ++salt) {
    WhisperBeamSearch sampled(cold);
    WhisperBeamSearch greedy(g);
    const Decoded a = drive(sampled, salt);
    const Decoded b = drive(greedy, salt);
    EXPECT_EQ(a.tokens, b.tokens) << salt;
  }
  o.temperature = 1.0f;
  const WhisperSearch hot(config(), o);
  WhisperBeamSearch one(hot);
  WhisperBeamSearch two(hot);
  std::set<std::vector<int>> texts;
  for (std::uint64_t salt = 0; salt < 10; ++salt) {
    one.reset();
    two.reset();
    const Decoded a = drive(one, salt);
    const Decoded b = drive(two, salt);
    EXPECT_EQ(a.tokens, b.tokens) << salt;  // the same seeds, the same draws
    EXPECT_NEAR(a.sum_logprob, score_of(hot, a.tokens, a.hit_limit, salt), 2e-4) << salt;
    texts.insert(a.tokens);
  }
  EXPECT_GT(texts.size(), 3u);
}

TEST(WhisperBeamSearch, RefusesOptionsOutOfRange) {
  for (auto set : std::vector<void (*)(WhisperDecodeOptions&)>{
           [](WhisperDecodeOptions& o) { o.beam_size = 0; }, [](WhisperDecodeOptions& o) { o.beam_size = 17; },
           [](WhisperDecodeOptions& o) { o.best_of = 0; }, [](WhisperDecodeOptions& o) { o.temperature = -0.1f; },
           [](WhisperDecodeOptions& o) { o.temperature = NAN; }, [](WhisperDecodeOptions& o) { o.patience = 0.0f; },
           [](WhisperDecodeOptions& o) { o.length_penalty = -1.0f; }}) {
    WhisperDecodeOptions o;
    set(o);
    try {
      WhisperSearch s(config(), o);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
  WhisperDecodeOptions o;
  o.beam_size = 16;  // 32 candidates: more than... the 71 tokens hold them
  const WhisperSearch s(config(), o);
  EXPECT_NO_THROW(WhisperBeamSearch{s});
}

TEST(WhisperFallback, CompressionRatioIsPythonsZlibs) {
  // Python: len(b) / len(zlib.compress(b)) with b = text.strip().encode().
  EXPECT_DOUBLE_EQ(whisper_compression_ratio("Press one to record your unavailable message."), 45.0 / 52.0);
  EXPECT_DOUBLE_EQ(whisper_compression_ratio(" la la la la la la la la la la la la la la la la la la la la "), 59.0 / 14.0);
  EXPECT_DOUBLE_EQ(whisper_compression_ratio("\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, \xd0\xba\xd0\xb0\xd0\xba "
                                             "\xd0\xb4\xd0\xb5\xd0\xbb\xd0\xb0?"),
                   30.0 / 41.0);
  EXPECT_EQ(whisper_compression_ratio("  "), 0.0);
}

TEST(WhisperFallback, FasterWhispersRules) {
  WhisperDecodeOptions o;  // log-prob -1.0, no-speech 0.6
  EXPECT_FALSE(whisper_needs_fallback({0.0f, -0.3, 0.1f, 1.2}, o, 2.4f));
  EXPECT_TRUE(whisper_needs_fallback({0.0f, -0.3, 0.1f, 2.5}, o, 2.4f));   // repeats itself
  EXPECT_TRUE(whisper_needs_fallback({0.0f, -1.2, 0.1f, 1.2}, o, 2.4f));   // unsure
  EXPECT_FALSE(whisper_needs_fallback({0.0f, -1.2, 0.7f, 2.5}, o, 2.4f));  // silence: kept (then skipped)
  EXPECT_FALSE(whisper_needs_fallback({0.0f, -0.3, 0.1f, 9.0}, o, 0.0f));  // ratio not checked
  // Every attempt failed: the best avg_logprob among those that do not repeat themselves.
  const std::vector<WhisperAttempt> tries = {{0.0f, -1.5, 0.1f, 1.0}, {0.2f, -0.5, 0.1f, 3.0}, {0.4f, -1.2, 0.1f, 2.0}};
  EXPECT_EQ(whisper_pick_attempt(tries, 2.4f), 2u);
  const std::vector<WhisperAttempt> loops = {{0.0f, -1.5, 0.1f, 3.0}, {0.2f, -0.5, 0.1f, 3.0}};
  EXPECT_EQ(whisper_pick_attempt(loops, 2.4f), 1u);
}

}  // namespace
}  // namespace brisvox
