// brisvox's Whisper on real multilingual weights (Whisper base, converted by scripts/setup.sh)
// against faster-whisper's golden output without a language (tests/data/stt/
// faster_whisper_base_multilingual.json, tools/whisper/make_goldens.py --multilingual): the
// Asterisk prompts in English, Spanish, French, Italian and Russian (8 kHz, resampled by brisvox),
// each language detected on its window as faster-whisper does.
//
// Tolerances: the detected language must equal faster-whisper's on >= 98 % of the utterances; the
// text must be identical on >= 95 % of each language's utterances (a token decided by a logit gap
// below the runtimes' ~1e-5 differences may differ). The language's probability agrees within
// 0.03, not to float precision: faster-whisper 1.2.1 detects on a window of the content frames
// plus the one extra frame of its features (transcribe: features[:, seek:seek + 3000]) and then
// decodes on the content frames alone, while brisvox detects in the decode's own first step.
// That frame moves the probability by up to ~0.016 on these prompts (checked in the venv:
// CTranslate2's detect_language on both windows), never the language.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "brisvox/models/stt/whisper_transcriber.h"
#include "stt_test_util.h"

namespace brisvox {
namespace {

struct Golden {
  std::string name;
  std::string corpus;  // asterisk-<language>
  std::string path;
  std::string reference;
  std::string text;
  std::string language;
  double language_probability = 0.0;
};

std::vector<Golden> read_goldens(const char* file) {
    const auto j = test::read_json_file(test::data_path(file));
    std::vector<Golden> out;
    for (const auto& u : j["utterances"]) {
      Golden g;
      g.name = u["name"];
      g.corpus = u["corpus"];
      g.path = j["file_root"].get<std::string>() + "/" + u["file"].get<std::string>();
      g.reference = u["reference"];
      g.text = u["text"];
      g.language = u["language"];
      g.language_probability = u["language_probability"];
      out.push_back(std::move(g));
    }
    return out;
}

// faster-whisper's greedy decoding (beam 1, temperature 0).
const std::vector<Golden>& goldens() {
  static const std::vector<Golden> all = read_goldens("stt/faster_whisper_base_multilingual.json");
  return all;
}

// faster-whisper's default decoding (beam 5, the temperature fallback).
const std::vector<Golden>& beam_goldens() {
  static const std::vector<Golden> all = read_goldens("stt/faster_whisper_base_multilingual_beam5.json");
  return all;
}

const WhisperModel& base() {
  static const WhisperModel model = WhisperModel::load(test::bundled_model("whisper-base"));
  return model;
}

const Golden& golden(const std::string& name) {
  for (const Golden& g : goldens()) {
    if (g.name == name) return g;
  }
  throw Error(ErrorCode::kInvalidArgument, "no golden " + name);
}

// Per corpus: identical texts, and WER against the published transcripts for brisvox and for
// faster-whisper; differing texts are printed.
struct Tally {
  std::map<std::string, std::pair<int, int>> same_text;  // corpus: identical, all
  std::map<std::string, std::pair<test::WordErrorRate, test::WordErrorRate>> wer;  // brisvox, faster-whisper

  void add(const Golden& g, const std::string& text) {
    auto& [identical, all] = same_text[g.corpus];
    identical += text == g.text;
    ++all;
    if (text != g.text) {
      std::printf("differs  %-40s brisvox '%s'\n         %-40s faster-whisper '%s'\n", g.name.c_str(), text.c_str(), "",
                  g.text.c_str());
    }
    wer[g.corpus].first.add(g.reference, text);
    wer[g.corpus].second.add(g.reference, g.text);
  }
};

TEST(WhisperMultilingual, TheGoldensCoverFiveLanguages) {
  std::map<std::string, int> per_language;
  for (const Golden& g : goldens()) ++per_language[g.corpus];
  EXPECT_EQ(per_language.size(), 5u);
  for (const auto& [corpus, n] : per_language) EXPECT_GE(n, 15) << corpus;
}

TEST(WhisperMultilingual, DetectsAndTranscribesAsFasterWhisper) {
  ASSERT_TRUE(base().config().multilingual);
  WhisperTranscriber transcriber(base());
  std::size_t same_language = 0;
  double max_probability_diff = 0.0;
  Tally tally;
  const auto& same_text = tally.same_text;
  auto& wer = tally.wer;
  // Every fifth utterance by default (about 30 s of CPU; the beam search's and the word
  // timestamps' tests cover others' language detection); BRISVOX_STT_ALL_GOLDENS=1 runs all (the
  // figures of docs/MODELS.md).
  const bool all_goldens = std::getenv("BRISVOX_STT_ALL_GOLDENS") != nullptr;
  std::size_t checked = 0;
  for (std::size_t i = 0; i < goldens().size(); i += all_goldens ? 1 : 5) {
    const Golden& g = goldens()[i];
    ++checked;
    const Audio audio = load_audio(g.path);
    const WhisperTranscript t = transcriber.transcribe(audio.samples, audio.sample_rate_hz);
    const std::string text = t.text();
    if (t.language == g.language) {
      ++same_language;
      max_probability_diff = std::max(max_probability_diff, std::abs(t.language_probability - g.language_probability));
    } else {
      std::printf("language %-40s brisvox %s (%.3f), faster-whisper %s (%.3f)\n", g.name.c_str(), t.language.c_str(),
                  t.language_probability, g.language.c_str(), g.language_probability);
    }
    tally.add(g, text);
  }
  const double n = static_cast<double>(checked);
  std::printf("language equal to faster-whisper's: %zu/%zu; max |probability diff| %.2e\n", same_language, checked,
              max_probability_diff);
  for (const auto& [corpus, counts] : same_text) {
    std::printf("  %s: identical text %d/%d; WER vs the published transcripts: brisvox %.2f %%, faster-whisper "
                "%.2f %%\n",
                corpus.c_str(), counts.first, counts.second, wer[corpus].first.percent(), wer[corpus].second.percent());
    EXPECT_GE(counts.first, 0.95 * counts.second) << corpus;
  }
  EXPECT_GE(static_cast<double>(same_language), 0.98 * n);
  EXPECT_LT(max_probability_diff, 0.03);
}

TEST(WhisperMultilingual, FasterWhispersDefaultDecodingGivesItsAccuracy) {
  // Beam search (5) with the temperature fallback, as faster-whisper's transcribe defaults. At
  // temperature 0 the beam search is CTranslate2's, so texts are expected identical; a window that
  // falls back samples from another generator than CTranslate2's, so only the accuracy can agree:
  // WER against the published transcripts within 0.5 points of faster-whisper's per language.
  WhisperTranscriber transcriber(base());
  const WhisperTranscribeOptions options = WhisperTranscribeOptions::faster_whisper();
  const bool all_goldens = std::getenv("BRISVOX_STT_ALL_GOLDENS") != nullptr;
  Tally tally;
  const auto& same_text = tally.same_text;
  auto& wer = tally.wer;
  std::size_t same_language = 0;
  std::size_t checked = 0;
  int fallbacks = 0;
  // Every eighth utterance by default (the whole set with BRISVOX_STT_ALL_GOLDENS=1).
  for (std::size_t i = 0; i < beam_goldens().size(); i += all_goldens ? 1 : 8) {
    const Golden& g = beam_goldens()[i];
    ++checked;
    const Audio audio = load_audio(g.path);
    const WhisperTranscript t = transcriber.transcribe(audio.samples, audio.sample_rate_hz, options);
    const std::string text = t.text();
    for (const WhisperSegment& seg : t.segments) fallbacks += seg.temperature > 0.0f;
    same_language += t.language == g.language;
    tally.add(g, text);
  }
  std::printf("beam 5 + fallback: language equal to faster-whisper's %zu/%zu; windows decoded again at a higher "
              "temperature: %d\n",
              same_language, checked, fallbacks);
  for (const auto& [corpus, counts] : same_text) {
    const double ours = wer[corpus].first.percent();
    const double theirs = wer[corpus].second.percent();
    std::printf("  %s: identical text %d/%d; WER brisvox %.2f %%, faster-whisper %.2f %%\n", corpus.c_str(), counts.first,
                counts.second, ours, theirs);
    EXPECT_LE(ours, theirs + 0.5) << corpus;
  }
  EXPECT_GE(static_cast<double>(same_language), 0.98 * static_cast<double>(checked));
}

TEST(WhisperMultilingual, TheFallbackFiresWhereFasterWhispersDoes) {
  // English prompts played backwards (tests/data/stt/faster_whisper_base_reversed.json,
  // make_goldens.py --reversed): Whisper is unsure of them, and on some the first attempt (beam 5,
  // temperature 0) repeats itself or scores below the log-probability threshold. That attempt is
  // CTranslate2's beam search, so it must score as faster-whisper's did, and the fallback must fire
  // exactly where faster-whisper's did. What the sampled attempts then give depends on each
  // engine's random draws, so only their number is checked (at most one per temperature).
  const auto j = test::read_json_file(test::data_path("stt/faster_whisper_base_reversed.json"));
  WhisperTranscriber transcriber(base());
  WhisperTranscribeOptions options = WhisperTranscribeOptions::faster_whisper();
  // Whether the fallback fires is decided by the first attempt alone; one more temperature shows
  // the second attempt happening, at a third of the CPU of faster-whisper's five.
  options.fallback.temperatures = {0.0f, 0.6f};
  int fired = 0;
  int checked = 0;
  for (const auto& u : j["utterances"]) {
    const int samples = u["samples_16k"];
    if (samples > 30 * 16000) continue;  // one window: faster-whisper's segments align with brisvox's
    const Audio audio = load_audio(j["file_root"].get<std::string>() + "/" + u["file"].get<std::string>());
    std::vector<float> backward = resample(audio.samples, audio.sample_rate_hz, 16000);
    std::reverse(backward.begin(), backward.end());
    const WhisperTranscript t = transcriber.transcribe(backward, 16000, options);
    const auto& first = u["first_attempts"][0];
    WhisperAttempt theirs{0.0f, first["avg_logprob"], first["no_speech_prob"], first["compression_ratio"]};
    ASSERT_EQ(t.segments.size(), 1u);
    const WhisperSegment& seg = t.segments[0];
    ASSERT_FALSE(seg.attempts.empty());
    const WhisperAttempt& ours = seg.attempts[0];
    const std::string name = u["name"];
    EXPECT_EQ(t.language, u["language"].get<std::string>()) << name;
    EXPECT_NEAR(ours.avg_logprob, theirs.avg_logprob, 1e-3) << name;
    EXPECT_NEAR(ours.compression_ratio, theirs.compression_ratio, 1e-6) << name;
    const bool fallback = whisper_needs_fallback(theirs, options.decode, options.fallback.compression_ratio_threshold);
    EXPECT_EQ(seg.attempts.size() > 1, fallback) << name;
    EXPECT_LE(seg.attempts.size(), options.fallback.temperatures.size());
    std::printf("%-28s first attempt avg_logprob %.3f (faster-whisper %.3f), ratio %.2f: %zu attempt(s), kept T=%.1f\n",
                name.c_str(), ours.avg_logprob, theirs.avg_logprob, ours.compression_ratio, seg.attempts.size(),
                seg.temperature);
    fired += fallback;
    ++checked;
  }
  EXPECT_GE(checked, 4);
  EXPECT_GE(fired, 1);
  EXPECT_LT(fired, checked);
}

TEST(WhisperMultilingual, APromptAndHotwordsDecodeAsFasterWhispers) {
  // faster-whisper's initial_prompt and hotwords (tests/data/stt/faster_whisper_base_prompted.json,
  // make_goldens.py --multilingual --prompt ... --hotwords ...): every fourth prompt of the set,
  // greedy, the language detected (on <|startoftranscript|> alone, as faster-whisper does). Each
  // prompt is one window, so faster-whisper's first-window-only initial prompt is brisvox's.
  const auto j = test::read_json_file(test::data_path("stt/faster_whisper_base_prompted.json"));
  WhisperTranscribeOptions options;
  options.decode.prompt = j["options"]["initial_prompt"];
  options.decode.hotwords = j["options"]["hotwords"];
  WhisperTranscriberConfig config;
  config.max_batch = 1;
  config.max_width = 1;
  config.max_tokens = base().config().dims.n_text_ctx;  // room for the prompt
  WhisperTranscriber transcriber(base(), config);
  const std::vector<Golden> plain = goldens();
  int identical = 0, changed = 0, checked = 0, same_language = 0;
  const bool all_goldens = std::getenv("BRISVOX_STT_ALL_GOLDENS") != nullptr;
  const auto& utterances = j["utterances"];
  for (std::size_t i = 0; i < utterances.size(); i += all_goldens ? 1 : 2) {
    const auto& u = utterances[i];
    const Audio audio = load_audio(j["file_root"].get<std::string>() + "/" + u["file"].get<std::string>());
    const WhisperTranscript t = transcriber.transcribe(audio.samples, audio.sample_rate_hz, options);
    const std::string want = u["text"];
    ++checked;
    identical += t.text() == want;
    same_language += t.language == u["language"].get<std::string>();
    changed += golden(u["name"]).text != want;  // the prompt changed faster-whisper's own text
    if (t.text() != want) {
      std::printf("differs  %-40s brisvox '%s'\n         %-40s faster-whisper '%s'\n", u["name"].get<std::string>().c_str(),
                  t.text().c_str(), "", want.c_str());
    }
  }
  std::printf("prompted: identical text %d/%d, language %d/%d; the prompt changed faster-whisper's text on %d\n",
              identical, checked, same_language, checked, changed);
  EXPECT_GE(identical, 0.95 * checked);
  EXPECT_EQ(same_language, checked);
  EXPECT_GE(changed, 1) << "a prompt that changes nothing tests nothing";
  // Too long, or with control characters: refused, saying why.
  WhisperTranscribeOptions bad;
  std::string words;
  for (int k = 0; k < 300; ++k) words += " word";
  bad.decode.prompt = words;
  const Audio audio = load_audio(plain.front().path);
  try {
    transcriber.transcribe(audio.samples, audio.sample_rate_hz, bad);
    ADD_FAILURE() << "a 300-word prompt was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("at most 223"), std::string::npos) << e.what();
  }
  bad.decode.prompt.clear();
  bad.decode.hotwords = "Asterisk\x07";
  EXPECT_THROW(transcriber.transcribe(audio.samples, audio.sample_rate_hz, bad), Error);
}

TEST(WhisperMultilingual, AGivenLanguageIsDecodedInWithProbabilityOne) {
  const Golden& g = golden(goldens()[static_cast<std::size_t>(goldens().size() / 2)].name);
  const Audio audio = load_audio(g.path);
  WhisperTranscribeOptions o;
  o.decode.language = g.language;
  const WhisperTranscript t = transcribe(base(), audio.samples, audio.sample_rate_hz, o);
  EXPECT_EQ(t.language, g.language);
  EXPECT_EQ(t.language_probability, 1.0f);
  EXPECT_EQ(t.text(), g.text) << g.name;  // what detection chose, given
  o.decode.language = "xx";
  EXPECT_THROW(transcribe(base(), audio.samples, audio.sample_rate_hz, o), Error);
}

TEST(WhisperMultilingual, TheFirstWindowsLanguageHoldsForTheRecordingUnlessEachIsAsked) {
  // A Spanish prompt padded to one 30 s window, then a Russian one: two windows.
  const Golden* es = nullptr;
  const Golden* ru = nullptr;
  for (const Golden& g : goldens()) {
    if (!es && g.corpus == "asterisk-es" && g.language == "es" && g.language_probability > 0.9) es = &g;
    if (!ru && g.corpus == "asterisk-ru" && g.language == "ru" && g.language_probability > 0.9) ru = &g;
  }
  ASSERT_TRUE(es && ru);
  const Audio a = load_audio(es->path);
  const Audio b = load_audio(ru->path);
  ASSERT_EQ(a.sample_rate_hz, b.sample_rate_hz);
  std::vector<float> both(static_cast<std::size_t>(30 * a.sample_rate_hz), 0.0f);
  ASSERT_LT(a.samples.size(), both.size());
  std::copy(a.samples.begin(), a.samples.end(), both.begin());
  both.insert(both.end(), b.samples.begin(), b.samples.end());

  WhisperTranscriber transcriber(base());
  const WhisperTranscript first = transcriber.transcribe(both, a.sample_rate_hz);
  ASSERT_EQ(first.segments.size(), 2u);
  EXPECT_EQ(first.language, "es");
  EXPECT_EQ(first.segments[0].language, "es");
  EXPECT_EQ(first.segments[1].language, "es");  // decoded in the recording's language
  EXPECT_EQ(first.segments[1].language_probability, first.segments[0].language_probability);

  WhisperTranscribeOptions each;
  each.language_detection = WhisperLanguageDetection::kEach;
  const WhisperTranscript own = transcriber.transcribe(both, a.sample_rate_hz, each);
  ASSERT_EQ(own.segments.size(), 2u);
  EXPECT_EQ(own.language, "es");
  EXPECT_EQ(own.segments[0].language, "es");
  EXPECT_EQ(own.segments[1].language, "ru");
  EXPECT_EQ(own.segments[1].text, ru->text);
}

}  // namespace
}  // namespace brisvox
