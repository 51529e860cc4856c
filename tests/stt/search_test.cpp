// The greedy search on hand-made logits: no ONNX Runtime, every expected number computed here.
#include "brisvox/models/stt/whisper_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "brisvox/error.h"
#include "toy_whisper.h"

namespace brisvox {
namespace {

using namespace toy;  // the toy configuration (toy_whisper.h)

// Logits that favour `best` by `margin` over a flat background of 0.
std::vector<float> favour(int best, float margin = 5.0f) {
  std::vector<float> l(kVocab, 0.0f);
  l[static_cast<std::size_t>(best)] = margin;
  return l;
}

// consume() takes writable logits; tests hand it temporaries.
void feed(WhisperSequence& seq, std::vector<float> logits) { seq.consume(logits); }

double log_softmax_at(const std::vector<float>& l, int i, const std::vector<int>& suppressed) {
  double sum = 0.0;
  for (int j = 0; j < kVocab; ++j) {
    if (std::find(suppressed.begin(), suppressed.end(), j) == suppressed.end()) sum += std::exp(l[static_cast<std::size_t>(j)]);
  }
  return l[static_cast<std::size_t>(i)] - std::log(sum);
}

TEST(WhisperSearch, BuildsThePromptLikeFasterWhisper) {
  const WhisperSearch en(config(false), {});
  EXPECT_EQ(std::vector<int>(en.prompt().begin(), en.prompt().end()), (std::vector<int>{kSot, kNoTimestamps}));
  WhisperDecodeOptions o;
  o.language = "de";
  o.task = WhisperTask::kTranslate;
  const WhisperSearch multi(config(true), o);
  EXPECT_EQ(std::vector<int>(multi.prompt().begin(), multi.prompt().end()),
            (std::vector<int>{kSot, kDe, kTranslate, kNoTimestamps}));
  o.timestamps = true;
  const WhisperSearch with_ts(config(true), o);
  EXPECT_EQ(std::vector<int>(with_ts.prompt().begin(), with_ts.prompt().end()), (std::vector<int>{kSot, kDe, kTranslate}));
  // CTranslate2's cap: min(n_text_ctx / 2, n_text_ctx - (prompt - 1)) = min(20, 37).
  EXPECT_EQ(multi.max_new_tokens(), 20);
  EXPECT_EQ(multi.max_positions(), 4 + 20 - 1);
}

TEST(WhisperSearch, RefusesWhatTheModelCannotDo) {
  WhisperDecodeOptions o;
  o.language = "xx";
  try {
    WhisperSearch s(config(true), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("en,de"), std::string::npos) << e.what();
  }
  o.language = "de";
  EXPECT_THROW(WhisperSearch(config(false), o), Error);  // English-only
  o = {};
  o.task = WhisperTask::kTranslate;
  EXPECT_THROW(WhisperSearch(config(false), o), Error);
  o = {};
  o.suppress_tokens = {kVocab};
  EXPECT_THROW(WhisperSearch(config(false), o), Error);
  o = {};
  o.max_new_tokens = 40;  // 2 prompt tokens + 40 - 1 > 40 positions
  EXPECT_THROW(WhisperSearch(config(false), o), Error);
}

TEST(WhisperSequence, WithoutALanguageTheStartStepDetectsIt) {
  for (const std::string language : {"", "auto"}) {
    WhisperDecodeOptions o;
    o.language = language;
    const WhisperSearch search(config(true), o);
    EXPECT_TRUE(search.detects_language());
    WhisperSequence seq(search);
    EXPECT_EQ(seq.language(), "");
    // <|de|> beats <|en|> by 1; a text token's larger logit does not count (the softmax is over
    // the language tokens alone, as CTranslate2's detect_language).
    std::vector<float> l(kVocab, 0.0f);
    l[kEn] = 2.0f;
    l[kDe] = 3.0f;
    l[5] = 9.0f;
    seq.consume(l);
    EXPECT_EQ(seq.next_token(), kDe);
    EXPECT_EQ(seq.language(), "de");
    EXPECT_EQ(seq.language_token(), kDe);
    const double p_de = std::exp(3.0) / (std::exp(3.0) + std::exp(2.0));
    EXPECT_NEAR(seq.language_probability(), p_de, 1e-6);
    ASSERT_EQ(seq.language_probabilities().size(), 2u);
    EXPECT_NEAR(seq.language_probabilities()[0], 1.0 - p_de, 1e-6);
    feed(seq, favour(0));  // <|de|> fed: the task next, then <|notimestamps|>
    EXPECT_EQ(seq.next_token(), kTranscribe);
    // A new segment detects again.
    seq.reset();
    EXPECT_EQ(seq.language(), "");
    l[kEn] = 4.0f;
    seq.consume(l);
    EXPECT_EQ(seq.language(), "en");
  }
}

TEST(WhisperSequence, AGivenOrSharedLanguageIsNotDetected) {
  WhisperDecodeOptions o;
  o.language = "en";
  const WhisperSearch given(config(true), o);
  EXPECT_FALSE(given.detects_language());
  WhisperSequence a(given);
  EXPECT_EQ(a.language(), "en");
  feed(a, favour(kDe));
  EXPECT_EQ(a.next_token(), kEn);
  EXPECT_EQ(a.language_probability(), 1.0f);

  // A recording's later window (a stream's later segment) takes the first one's language, before
  // or after its own start step, but not once its language token was fed.
  const WhisperSearch detect(config(true), {});
  WhisperSequence b(detect);
  b.set_language(kDe, 0.75f);
  feed(b, favour(kEn));
  EXPECT_EQ(b.next_token(), kDe);
  EXPECT_EQ(b.language_probability(), 0.75f);
  WhisperSequence c(detect);
  feed(c, favour(kEn));
  EXPECT_EQ(c.next_token(), kEn);
  c.set_language(kDe, 0.5f);
  EXPECT_EQ(c.next_token(), kDe);
  EXPECT_EQ(c.language(), "de");
  feed(c, favour(0));
  EXPECT_THROW(c.set_language(kEn, 1.0f), Error);
  EXPECT_THROW(b.set_language(kTranscribe, 1.0f), Error);  // not a language

  // English-only models: "en", never detected, and no language token to set.
  const WhisperSearch en(config(false), {});
  EXPECT_FALSE(en.detects_language());
  WhisperSequence d(en);
  EXPECT_EQ(d.language(), "en");
  EXPECT_EQ(d.language_probability(), 1.0f);
  EXPECT_THROW(d.set_language(kEn, 1.0f), Error);
}

TEST(WhisperSequence, NoSpeechProbabilityIsTheSoftmaxOfTheRawLogitsAfterSot) {
  const WhisperSearch search(config(false), {});
  WhisperSequence seq(search);
  std::vector<float> l(kVocab, 0.0f);
  l[kNoSpeech] = 2.0f;
  l[kEot] = 1.0f;
  seq.consume(l);
  const double expected = std::exp(2.0) / (std::exp(2.0) + std::exp(1.0) + (kVocab - 2));
  EXPECT_NEAR(seq.no_speech_prob(), expected, 1e-6);
  EXPECT_EQ(seq.next_token(), kNoTimestamps);
  EXPECT_EQ(seq.position(), 1);
  EXPECT_FALSE(seq.done());
}

TEST(WhisperSequence, SamplesGreedilyUnderTheSuppressedDistribution) {
  const WhisperSearch search(config(false), {});
  WhisperSequence seq(search);
  feed(seq, std::vector<float>(kVocab, 0.0f));  // after sot
  // First sampled token: blank (0) and eot are suppressed as well as the list; 3 is the highest
  // logit but suppressed, so 5 wins.
  std::vector<float> l = favour(3, 9.0f);
  l[kBlank] = 8.0f;
  l[kEot] = 8.0f;
  l[5] = 4.0f;
  std::vector<int> suppressed = {3, kTranslate, kTranscribe, kSot, kSotPrev, kSotLm, kNoSpeech, kBlank, kEot};
  const double lp1 = log_softmax_at(l, 5, suppressed);
  seq.consume(l);
  ASSERT_EQ(seq.tokens().size(), 1u);
  EXPECT_EQ(seq.tokens()[0], 5);
  EXPECT_EQ(seq.next_token(), 5);
  EXPECT_TRUE(std::isinf(l[3]) && l[3] < 0);  // masked in place
  // Later, blank is allowed: it wins.
  l = favour(kBlank, 3.0f);
  suppressed = {3, kTranslate, kTranscribe, kSot, kSotPrev, kSotLm, kNoSpeech};
  const double lp2 = log_softmax_at(l, kBlank, suppressed);
  seq.consume(l);
  EXPECT_EQ(seq.tokens().back(), kBlank);
  // Then <|endoftext|> ends it; its log-probability counts.
  l = favour(kEot, 6.0f);
  const double lp3 = log_softmax_at(l, kEot, suppressed);
  seq.consume(l);
  EXPECT_TRUE(seq.done());
  EXPECT_FALSE(seq.hit_token_limit());
  EXPECT_EQ(seq.tokens().size(), 2u);
  EXPECT_NEAR(seq.sum_logprob(), lp1 + lp2 + lp3, 1e-6);
  EXPECT_NEAR(seq.avg_logprob(), (lp1 + lp2 + lp3) / 3.0, 1e-6);
  // done: further logits change nothing
  seq.consume(l);
  EXPECT_EQ(seq.tokens().size(), 2u);
}

TEST(WhisperSequence, ForcedTokensComeFirstAndAreScoredAsChosen) {
  const WhisperSearch search(config(false), {});
  WhisperSequence seq(search);
  const std::vector<int> forced = {6, 7};
  seq.force(forced);
  feed(seq, std::vector<float>(kVocab, 0.0f));  // after sot
  const std::vector<int> suppressed_first = {3, kTranslate, kTranscribe, kSot, kSotPrev, kSotLm, kNoSpeech, kBlank, kEot};
  const std::vector<int> suppressed = {3, kTranslate, kTranscribe, kSot, kSotPrev, kSotLm, kNoSpeech};
  // 5 is the most probable, 6 is forced: 6, with its own log-probability.
  std::vector<float> l = favour(5, 4.0f);
  const double lp1 = log_softmax_at(l, 6, suppressed_first);
  seq.consume(l);
  l = favour(5, 4.0f);
  const double lp2 = log_softmax_at(l, 7, suppressed);
  seq.consume(l);
  // Then chosen again: 5.
  l = favour(5, 4.0f);
  const double lp3 = log_softmax_at(l, 5, suppressed);
  seq.consume(l);
  EXPECT_EQ(std::vector<int>(seq.tokens().begin(), seq.tokens().end()), (std::vector<int>{6, 7, 5}));
  EXPECT_NEAR(seq.sum_logprob(), lp1 + lp2 + lp3, 1e-6);
  // Kept across reset(); a forced token the step forbids (blank, suppressed first) ends the forcing.
  const std::vector<int> blank_first = {kBlank, 7};
  seq.force(blank_first);
  seq.reset();
  feed(seq, std::vector<float>(kVocab, 0.0f));
  feed(seq, favour(5, 4.0f));
  feed(seq, favour(8, 4.0f));
  EXPECT_EQ(std::vector<int>(seq.tokens().begin(), seq.tokens().end()), (std::vector<int>{5, 8}));
}

TEST(WhisperSequence, TiesGoToTheLowestIdAndNaNNeverWins) {
  const WhisperSearch search(config(false), {});
  WhisperSequence seq(search);
  feed(seq, std::vector<float>(kVocab, 0.0f));
  std::vector<float> l(kVocab, 0.0f);
  l[1] = std::numeric_limits<float>::quiet_NaN();
  l[6] = 1.0f;
  l[7] = 1.0f;
  seq.consume(l);
  EXPECT_EQ(seq.tokens().back(), 6);
  EXPECT_TRUE(std::isfinite(seq.sum_logprob()));
  std::vector<float> all_nan(kVocab, std::numeric_limits<float>::quiet_NaN());
  EXPECT_THROW(seq.consume(all_nan), Error);
  EXPECT_THROW(feed(seq, std::vector<float>(kVocab - 1, 0.0f)), Error);
}

TEST(WhisperSequence, StopsAtTheTokenLimitAndSaysSo) {
  WhisperDecodeOptions o;
  o.max_new_tokens = 3;
  const WhisperSearch search(config(false), o);
  WhisperSequence seq(search);
  int steps = 0;
  while (!seq.done()) {
    std::vector<float> l = favour(7);
    seq.consume(l);
    ASSERT_LT(++steps, 10);
  }
  EXPECT_EQ(steps, 2 + 3 - 1);  // 2 prompt steps (the second samples) + 2 more
  EXPECT_TRUE(seq.hit_token_limit());
  EXPECT_EQ(seq.tokens().size(), 3u);
  seq.reset();
  EXPECT_FALSE(seq.done());
  EXPECT_EQ(seq.next_token(), kSot);
  EXPECT_TRUE(seq.tokens().empty());
}

TEST(WhisperSequence, NoSpeechRuleIsFasterWhispers) {
  const WhisperSearch search(config(false), {});
  // High no-speech probability and a low log-probability: skipped.
  {
    WhisperSequence seq(search);
    feed(seq, favour(kNoSpeech, 10.0f));
    feed(seq, std::vector<float>(kVocab, 0.0f));  // flat: the first allowed token, lp = -log(62)
    feed(seq, favour(kEot, 5.0f));
    EXPECT_TRUE(seq.done());
    EXPECT_GT(seq.no_speech_prob(), 0.6f);
    EXPECT_LT(seq.avg_logprob(), -1.0);
    EXPECT_TRUE(seq.no_speech());
  }
  // The same no-speech probability but a confident text: kept.
  {
    WhisperSequence seq(search);
    feed(seq, favour(kNoSpeech, 10.0f));
    feed(seq, favour(5, 20.0f));
    feed(seq, favour(kEot, 20.0f));
    EXPECT_GT(seq.avg_logprob(), -1.0);
    EXPECT_FALSE(seq.no_speech());
  }
  // Low no-speech probability: kept whatever the log-probability.
  {
    WhisperSequence seq(search);
    feed(seq, std::vector<float>(kVocab, 0.0f));
    feed(seq, std::vector<float>(kVocab, 0.0f));
    feed(seq, std::vector<float>(kVocab, 0.0f));
    EXPECT_LT(seq.no_speech_prob(), 0.6f);
    EXPECT_FALSE(seq.no_speech());
  }
}

TEST(WhisperSequence, AnEmptySuppressListSuppressesNothing) {
  WhisperDecodeOptions o;
  o.suppress_tokens = {};
  o.suppress_blank = false;
  const WhisperSearch search(config(false), o);
  WhisperSequence seq(search);
  feed(seq, std::vector<float>(kVocab, 0.0f));
  feed(seq, favour(3));
  EXPECT_EQ(seq.tokens().back(), 3);
  // An explicit list also gets the task and start tokens (faster-whisper's get_suppressed_tokens).
  o.suppress_tokens = {4};
  const WhisperSearch explicit_list(config(false), o);
  WhisperSequence seq2(explicit_list);
  feed(seq2, std::vector<float>(kVocab, 0.0f));
  std::vector<float> l = favour(kSotPrev, 9.0f);
  l[4] = 8.0f;
  l[2] = 7.0f;
  seq2.consume(l);
  EXPECT_EQ(seq2.tokens().back(), 2);
}

// CTranslate2's ApplyTimestampRules, step by step.
TEST(WhisperSequence, TimestampRules) {
  WhisperDecodeOptions o;
  o.timestamps = true;
  o.max_initial_timestamp_s = 0.1f;  // timestamps 0.00 .. 0.10 allowed first: ids 20 .. 25
  const WhisperSearch search(config(false), o);
  ASSERT_EQ(search.prompt().size(), 1u);  // sot only: its logits also give the first token
  WhisperSequence seq(search);
  // 1. The first token must be a timestamp <= 0.10 s: text 5 and timestamp 0.5 s (45) lose to 22.
  std::vector<float> l = favour(5, 9.0f);
  l[45] = 8.0f;
  l[22] = 1.0f;
  l[kNoTimestamps] = 10.0f;
  seq.consume(l);
  ASSERT_EQ(seq.tokens().size(), 1u);
  EXPECT_EQ(seq.tokens()[0], 22);
  // 2. After one timestamp (the "penultimate" is itself), text must follow: 30 loses to 5.
  l = favour(30, 9.0f);
  l[5] = 1.0f;
  seq.consume(l);
  EXPECT_EQ(seq.tokens().back(), 5);
  // 3. After text, timestamps may not go back: 21 and 22 are forbidden, 23 allowed. With the
  // timestamps' total mass below the best text token, text still wins.
  l = std::vector<float>(kVocab, -10.0f);
  l[6] = 2.0f;
  l[21] = 5.0f;
  l[22] = 5.0f;
  l[23] = 1.0f;
  seq.consume(l);
  EXPECT_EQ(seq.tokens().back(), 6);
  // 4. The timestamps' total mass (many equal timestamps) beats the single best text token:
  // a timestamp is forced even though text 7 has the highest logit.
  l = std::vector<float>(kVocab, -10.0f);
  l[7] = 3.0f;
  for (int t = 23; t < kVocab; ++t) l[static_cast<std::size_t>(t)] = 0.0f;  // 48 x e^0 > e^3
  l[30] = 0.5f;
  seq.consume(l);
  EXPECT_EQ(seq.tokens().back(), 30);
  // 5. An opening timestamp after text: its closing one may not be earlier (29 forbidden), and no
  // text may come before it.
  l = std::vector<float>(kVocab, -10.0f);
  l[5] = 9.0f;
  l[29] = 8.0f;
  l[31] = 2.0f;
  seq.consume(l);
  EXPECT_EQ(seq.tokens().back(), 31);
  // 6. A complete pair: no timestamp next.
  l = favour(40, 9.0f);
  l[kEot] = 1.0f;
  seq.consume(l);
  EXPECT_TRUE(seq.done());
  EXPECT_EQ((std::vector<int>(seq.tokens().begin(), seq.tokens().end())), (std::vector<int>{22, 5, 6, 30, 31}));
}

}  // namespace
}  // namespace brisvox
