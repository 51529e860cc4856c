// The batched encoder and decoder on generated models: lanes, batch invariance, limits, bad input,
// cancellation.
#include "brisvox/models/stt/whisper_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "brisvox/audio/audio_file.h"
#include "brisvox/audio/resampler.h"
#include "brisvox/error.h"
#include "brisvox/models/stt/whisper_encoder.h"
#include "brisvox/models/stt/whisper_transcriber.h"
#include "stt_test_util.h"

namespace brisvox {
namespace {

const WhisperModel& en_model() {
  static const WhisperModel m = WhisperModel::load(test::whisper_test_model("whisper-test-en"));
  return m;
}

// The 400-frame (4 s) window of a clip of sample.wav starting at `offset_s`.
std::vector<float> window_at(double offset_s) {
  static const Audio audio = load_audio(test::sample_wav());
  WhisperFeatures f(400, 100, 100);
  std::vector<float> mel(80 * 400);
  const auto first = static_cast<std::ptrdiff_t>(offset_s * 16000);
  f.compute(std::span<const float>(audio.samples.data() + first, 4 * 16000), WhisperWindow::kFull, mel);
  return mel;
}

void encode_into(WhisperEncoder& encoder, const std::vector<float>& mel, const WhisperEncoderOutput& out) {
  const float* p = mel.data();
  encoder.run(400, std::span(&p, 1), std::span(&out, 1));
}

TEST(WhisperDecoder, LanesAreTakenLowestFirstAndHolesRideAlong) {
  WhisperDecoder d(en_model(), WhisperDecoderConfig{4, 0, 0, {}});
  EXPECT_EQ(d.active_end(), 0);
  EXPECT_EQ(d.acquire(), 0);
  EXPECT_EQ(d.acquire(), 1);
  EXPECT_EQ(d.acquire(), 2);
  EXPECT_EQ(d.active_end(), 3);
  d.release(1);
  EXPECT_EQ(d.busy_count(), 2);
  EXPECT_EQ(d.active_end(), 3);  // the hole at 1 stays inside the batch
  EXPECT_EQ(d.acquire(), 1);     // and is filled first
  EXPECT_EQ(d.acquire(), 3);
  EXPECT_EQ(d.acquire(), -1);
  d.release(3);
  d.release(2);
  EXPECT_EQ(d.active_end(), 2);
  EXPECT_THROW(d.release(3), Error);
  EXPECT_THROW(d.begin(7, 10), Error);
  EXPECT_THROW(d.begin(0, 201), Error);  // more audio positions than the lanes hold
  EXPECT_EQ(d.max_tokens(), 37);         // min(64, 5 + 64 / 2)
  EXPECT_EQ(d.max_audio_positions(), 200);
}

TEST(WhisperDecoder, BytesPerLaneFollowTheStatedFormula) {
  WhisperDecoder d(en_model(), WhisperDecoderConfig{2, 20, 150, {}});
  // 8 x layers x state x (tokens + audio) + 4 x vocab, plus the new-row buffer, the alignment
  // heads' scores (the generated model's: every head of its second layer) and three int64.
  ASSERT_EQ(d.alignment_heads(), 4);
  const std::size_t expected = 8 * 2 * 64 * (20 + 150) + 4 * 1811 + 4 * 2 * 2 * 64 + 4 * 4 * 150 + 3 * 8;
  EXPECT_EQ(d.bytes_per_lane(), expected);
}

// Every sequence's logits are the same alone and batched with others (holes and different
// positions included): rows of a batch never mix.
TEST(WhisperDecoder, BatchedStepsEqualSingleSteps) {
  const WhisperModel& m = en_model();
  WhisperEncoder encoder(m, WhisperEncoderConfig{3, 100, {}});
  const std::vector<std::vector<float>> mels = {window_at(1.0), window_at(9.0), window_at(13.0)};
  // Reference: each sequence alone, feeding tokens 5, 6, 7, ... after sot.
  constexpr int kSteps = 6;
  const int sot = m.config().tokens.sot;
  std::vector<std::vector<std::vector<float>>> alone(3);
  for (int i = 0; i < 3; ++i) {
    WhisperDecoder d(m, WhisperDecoderConfig{1, 0, 0, {}});
    const int s = d.acquire();
    encode_into(encoder, mels[static_cast<std::size_t>(i)], d.begin(s, 200));
    for (int k = 0; k < kSteps; ++k) {
      const int token = k == 0 ? sot : 4 + k + i;
      d.step(std::vector<int>{token});
      const auto l = d.logits(s);
      alone[static_cast<std::size_t>(i)].emplace_back(l.begin(), l.end());
    }
  }
  // Batched: lanes 0 and 2 start together, lane 1 joins two steps later (so positions differ),
  // and a padding lane sits between them for the first two steps. The encoder runs the three
  // windows in one batch.
  WhisperDecoder d(m, WhisperDecoderConfig{3, 0, 0, {}});
  const int a = d.acquire(), hole = d.acquire(), c = d.acquire();
  ASSERT_EQ(hole, 1);
  std::vector<WhisperEncoderOutput> outs = {d.begin(a, 200), d.begin(c, 200)};
  std::vector<const float*> ptrs = {mels[0].data(), mels[2].data()};
  encoder.run(400, ptrs, outs);
  d.release(hole);
  std::vector<int> steps_done(3, 0);
  float max_diff = 0.0f;
  for (int round = 0; round < kSteps + 2; ++round) {
    if (round == 2) {
      ASSERT_EQ(d.acquire(), 1);
      encode_into(encoder, mels[1], d.begin(1, 200));
    }
    std::vector<int> tokens(3, 0);
    for (int s = 0; s < 3; ++s) {
      const int k = steps_done[static_cast<std::size_t>(s)];
      tokens[static_cast<std::size_t>(s)] = k == 0 ? sot : 4 + k + s;
    }
    for (int s = 0; s < 3; ++s) {
      if (d.busy(s) && steps_done[static_cast<std::size_t>(s)] >= kSteps) d.release(s);
    }
    if (d.busy_count() == 0) break;
    d.step(tokens);
    for (int s = 0; s < 3; ++s) {
      if (!d.busy(s)) continue;
      const int k = steps_done[static_cast<std::size_t>(s)]++;
      EXPECT_EQ(d.position(s), k + 1);
      const auto l = d.logits(s);
      const auto& ref = alone[static_cast<std::size_t>(s)][static_cast<std::size_t>(k)];
      for (std::size_t v = 0; v < l.size(); ++v) max_diff = std::max(max_diff, std::abs(l[v] - ref[v]));
    }
  }
  EXPECT_EQ(steps_done, (std::vector<int>{kSteps, kSteps, kSteps}));
  EXPECT_LT(max_diff, 1e-4f);
  std::printf("batched vs alone: max logit difference %.3g\n", max_diff);
}

TEST(WhisperDecoder, ACopiedLaneContinuesAsItsSource) {
  // Beam search's lane copies: lane 1 becomes lane 0 (audio and the tokens fed so far), then both
  // are fed the same tokens and must give the same logits; lane 2, copied without the audio after
  // holding another segment's, then continues with that other segment's encoder output.
  const WhisperModel& m = en_model();
  WhisperEncoder encoder(m, WhisperEncoderConfig{1, 100, {}});
  WhisperDecoder d(m, WhisperDecoderConfig{3, 0, 0, {}});
  const int a = d.acquire(), b = d.acquire(), c = d.acquire();
  encode_into(encoder, window_at(1.0), d.begin(a, 200));
  d.begin(b, 200);
  encode_into(encoder, window_at(9.0), d.begin(c, 200));
  const int sot = m.config().tokens.sot;
  for (int k = 0; k < 3; ++k) d.step(std::vector<int>{k == 0 ? sot : 5 + k, 0, k == 0 ? sot : 9});
  d.copy(a, b, true);
  d.copy(a, c, false);
  EXPECT_EQ(d.position(b), 3);
  EXPECT_EQ(d.position(c), 3);
  for (int k = 0; k < 3; ++k) {
    d.step(std::vector<int>{7 + k, 7 + k, 7 + k});
    const auto la = d.logits(a);
    const auto lb = d.logits(b);
    const auto lc = d.logits(c);
    float same = 0.0f, other = 0.0f;
    for (std::size_t v = 0; v < la.size(); ++v) {
      same = std::max(same, std::abs(la[v] - lb[v]));
      other = std::max(other, std::abs(la[v] - lc[v]));
    }
    EXPECT_EQ(same, 0.0f) << "step " << k;
    EXPECT_GT(other, 1e-3f) << "lane 2 kept its own audio";
  }
  EXPECT_THROW(d.copy(a, 2 + 1, false), Error);  // not a lane
  d.release(c);
  EXPECT_THROW(d.copy(a, c, false), Error);      // not busy
}

TEST(WhisperEncoder, BatchedRunEqualsSingleRuns) {
  const WhisperModel& m = en_model();
  WhisperEncoder encoder(m, WhisperEncoderConfig{2, 100, {}});
  const std::vector<float> a = window_at(2.0), b = window_at(20.0);
  const std::size_t n = encoder.output_floats(200);
  std::vector<float> alone_a(n), alone_b(n), both_a(n), both_b(n);
  encode_into(encoder, a, encoder.output_in(alone_a, 200));
  encode_into(encoder, b, encoder.output_in(alone_b, 200));
  std::vector<const float*> ptrs = {a.data(), b.data()};
  std::vector<WhisperEncoderOutput> outs = {encoder.output_in(both_a, 200), encoder.output_in(both_b, 200)};
  encoder.run(400, ptrs, outs);
  float diff = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    diff = std::max({diff, std::abs(alone_a[i] - both_a[i]), std::abs(alone_b[i] - both_b[i])});
  }
  EXPECT_LT(diff, 1e-4f);
  EXPECT_NE(alone_a, alone_b);
  EXPECT_THROW(encoder.run(400, std::vector<const float*>(3, a.data()), std::vector<WhisperEncoderOutput>(3, outs[0])), Error);
  EXPECT_THROW(encoder.run(150, std::span(ptrs.data(), 1), std::span(outs.data(), 1)), Error);  // not a multiple of 100
  std::vector<float> small(encoder.output_floats(50));
  const WhisperEncoderOutput too_small = encoder.output_in(small, 50);
  EXPECT_THROW(encoder.run(400, std::span(ptrs.data(), 1), std::span(&too_small, 1)), Error);
}

TEST(WhisperDecoder, StepRefusesWhatItCannotDo) {
  WhisperDecoder d(en_model(), WhisperDecoderConfig{2, 3, 0, {}});
  d.step(std::vector<int>{});  // nothing busy: a no-op
  const int s = d.acquire();
  EXPECT_THROW(d.step(std::vector<int>{1}), Error);  // no audio yet
  WhisperEncoder encoder(en_model(), {});
  encode_into(encoder, window_at(1.0), d.begin(s, 200));
  EXPECT_THROW(d.step(std::vector<int>{1811}), Error);  // outside the vocabulary
  EXPECT_THROW(d.step(std::vector<int>{}), Error);      // too few tokens
  for (int k = 0; k < 3; ++k) d.step(std::vector<int>{1});
  try {
    d.step(std::vector<int>{1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("max_tokens"), std::string::npos) << e.what();
  }
  EXPECT_EQ(d.position(s), 3);
}

TEST(WhisperDecoder, CancelledRunsFailUntilCleared) {
  WhisperDecoder d(en_model(), {});
  WhisperEncoder encoder(en_model(), {});
  const int s = d.acquire();
  encode_into(encoder, window_at(1.0), d.begin(s, 200));
  d.cancel_run();
  try {
    d.step(std::vector<int>{1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
  }
  EXPECT_EQ(d.position(s), 0);  // a failed step does not advance
  d.clear_cancel();
  d.step(std::vector<int>{1});
  EXPECT_EQ(d.position(s), 1);
  encoder.cancel_run();
  EXPECT_THROW(encode_into(encoder, window_at(1.0), d.begin(s, 200)), Error);
  encoder.clear_cancel();
  encode_into(encoder, window_at(1.0), d.begin(s, 200));
}

// A decoder that never emits <|endoftext|> stops at the token limit, and says so.
TEST(WhisperTranscriber, ANeverEndingDecoderStopsAtTheLimit) {
  const WhisperModel m = WhisperModel::load(test::whisper_test_model("whisper-test-never-eot"));
  WhisperTranscriber t(m);
  const Audio audio = load_audio(test::sample_wav());
  const std::span<const float> clip(audio.samples.data(), 2 * 16000);
  const WhisperTranscript r = t.transcribe(clip, 16000);
  ASSERT_EQ(r.segments.size(), 1u);
  EXPECT_TRUE(r.segments[0].hit_token_limit);
  EXPECT_EQ(r.segments[0].tokens.size(), 32u);  // min(64 / 2, 64 - 1)
  EXPECT_EQ(r.text(), std::string(32, 'a'));
  WhisperTranscribeOptions o;
  o.decode.max_new_tokens = 5;
  const WhisperTranscript five = t.transcribe(clip, 16000, o);
  EXPECT_TRUE(five.segments[0].hit_token_limit);
  EXPECT_EQ(five.text(), "aaaaa");
  EXPECT_EQ(five.segments[0].window_frames, 400);
  // A fit window at the limit is decoded again in the full window (where it loops as well), unless
  // the fallback is off.
  o.window = WhisperWindow::kFit;
  o.fit_min_frames = 100;
  const WhisperTranscript fit = t.transcribe(clip, 16000, o);
  EXPECT_TRUE(fit.segments[0].hit_token_limit);
  EXPECT_EQ(fit.segments[0].window_frames, 400);
  o.fit_fallback = false;
  const WhisperTranscript no_fallback = t.transcribe(clip, 16000, o);
  EXPECT_TRUE(no_fallback.segments[0].hit_token_limit);
  EXPECT_EQ(no_fallback.segments[0].window_frames, 200);
}

TEST(WhisperTranscriber, RefusesBadAudioAndOptions) {
  WhisperTranscriber t(en_model());
  std::vector<float> x(16000, 0.1f);
  x[8000] = std::numeric_limits<float>::quiet_NaN();
  try {
    t.transcribe(x, 8000);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadAudio);
    EXPECT_NE(std::string(e.what()).find("sample 8000 (1.000 s)"), std::string::npos) << e.what();
  }
  x[8000] = std::numeric_limits<float>::infinity();
  EXPECT_THROW(t.transcribe(x, 16000), Error);
  x[8000] = 0.0f;
  EXPECT_THROW(t.transcribe(x, 0), Error);
  WhisperTranscribeOptions o;
  o.fit_min_frames = 150;
  EXPECT_THROW(t.transcribe(x, 16000, o), Error);
  o = {};
  o.decode.max_new_tokens = 40;  // the decoder's 36 positions cannot hold 2 + 40 - 1
  EXPECT_THROW(t.transcribe(x, 16000, o), Error);
  // Less than one frame: nothing to transcribe. The transcriber is still usable after errors.
  EXPECT_TRUE(t.transcribe(std::vector<float>(100, 0.1f), 16000).segments.empty());
  EXPECT_EQ(t.transcribe(x, 16000).segments.size(), 1u);
}

// 8 kHz input is resampled to 16 kHz with audio/resampler: the same as resampling first.
TEST(WhisperTranscriber, ResamplesOtherRates) {
  WhisperTranscriber t(en_model());
  const Audio audio = load_audio(test::sample_wav());
  const std::vector<float> clip16(audio.samples.begin(), audio.samples.begin() + 3 * 16000);
  const std::vector<float> clip8 = resample(clip16, 16000, 8000);
  const WhisperTranscript a = t.transcribe(clip8, 8000);
  const WhisperTranscript b = t.transcribe(resample(clip8, 8000, 16000), 16000);
  ASSERT_EQ(a.segments.size(), 1u);
  EXPECT_EQ(a.segments[0].tokens, b.segments[0].tokens);
  EXPECT_DOUBLE_EQ(a.segments[0].avg_logprob, b.segments[0].avg_logprob);
}

// A recording longer than one window is cut into consecutive windows, decoded as a batch.
TEST(WhisperTranscriber, LongRecordingsAreCutIntoWindows) {
  const Audio audio = load_audio(test::sample_wav());  // 28.4 s: 7 windows of 4 s and a rest
  WhisperTranscriber batched(en_model(), WhisperTranscriberConfig{4, {}});
  WhisperTranscriber one(en_model(), WhisperTranscriberConfig{1, {}});
  const WhisperTranscript a = batched.transcribe(audio.samples, 16000);
  const WhisperTranscript b = one.transcribe(audio.samples, 16000);
  ASSERT_EQ(a.segments.size(), 8u);
  ASSERT_EQ(b.segments.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_DOUBLE_EQ(a.segments[i].start_s, 4.0 * static_cast<double>(i));
    EXPECT_EQ(a.segments[i].tokens, b.segments[i].tokens) << i;
    EXPECT_NEAR(a.segments[i].avg_logprob, b.segments[i].avg_logprob, 1e-5) << i;
  }
  EXPECT_NEAR(a.segments.back().end_s, audio.duration_s(), 0.01);
}

}  // namespace
}  // namespace brisvox
