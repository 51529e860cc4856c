#include "brisvox/models/vad/silero_vad.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/error.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using test::bundled_model;
using test::generated_model;

float sigmoid(double x) { return static_cast<float>(1.0 / (1.0 + std::exp(-x))); }

SileroVad make_vad(const std::string& path, int max_batch = 8) {
  SileroConfig config;
  config.model_path = path;
  config.max_batch = max_batch;
  return SileroVad(config);
}

std::vector<float> random_audio(std::size_t n, unsigned seed, float scale = 0.3f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> out(n);
  for (auto& x : out) x = dist(rng);
  return out;
}

// The contract model computes output = sigmoid(mean(context + chunk)) and stateN = state + output,
// so the adapter's binding by name, packing and context handling can be checked exactly.
TEST(SileroVadContract, BindsInputsByNameAndCarriesTheContext) {
  SileroVad vad = make_vad(generated_model("silero_contract.onnx"));
  EXPECT_EQ(silero_chunk_samples(16000), 512);
  EXPECT_EQ(silero_context_samples(16000), 64);
  const auto audio = random_audio(512 * 3, 1);
  SileroStreamState state;
  SileroStreamState* sp = &state;
  std::vector<float> previous_tail(64, 0.0f);
  float state_sum = 0;
  for (int c = 0; c < 3; ++c) {
    const float* chunk = audio.data() + c * 512;
    float prob = -1;
    vad.run(16000, std::span(&sp, 1), std::span(&chunk, 1), std::span(&prob, 1));
    double sum = std::accumulate(previous_tail.begin(), previous_tail.end(), 0.0);
    sum += std::accumulate(chunk, chunk + 512, 0.0);
    EXPECT_NEAR(prob, sigmoid(sum / 576.0), 1e-6) << "chunk " << c;
    state_sum += prob;
    for (float s : state.state) ASSERT_NEAR(s, state_sum, 1e-5);
    previous_tail.assign(chunk + 512 - 64, chunk + 512);
    for (int i = 0; i < 64; ++i) ASSERT_EQ(state.context[i], previous_tail[i]);
  }
}

TEST(SileroVadContract, EightKilohertzUses256SampleChunksAnd32OfContext) {
  SileroVad vad = make_vad(generated_model("silero_contract.onnx"));
  EXPECT_EQ(silero_chunk_samples(8000), 256);
  EXPECT_EQ(silero_context_samples(8000), 32);
  const auto audio = random_audio(256, 2);
  SileroStreamState state;
  state.context.fill(0.5f);  // only the first 32 context samples are used at 8 kHz
  SileroStreamState* sp = &state;
  const float* chunk = audio.data();
  float prob = 0;
  vad.run(8000, std::span(&sp, 1), std::span(&chunk, 1), std::span(&prob, 1));
  const double sum = 32 * 0.5 + std::accumulate(audio.begin(), audio.end(), 0.0);
  EXPECT_NEAR(prob, sigmoid(sum / 288.0), 1e-6);
}

TEST(SileroVadContract, BatchPacksEveryStreamIntoItsOwnRowAndStateSlice) {
  SileroVad vad = make_vad(generated_model("silero_contract.onnx"), 8);
  constexpr int kStreams = 5;
  std::vector<SileroStreamState> states(kStreams);
  std::vector<SileroStreamState*> ptrs;
  std::vector<std::vector<float>> chunks;
  std::vector<const float*> chunk_ptrs;
  for (int i = 0; i < kStreams; ++i) {
    states[i].state.fill(static_cast<float>(i));
    states[i].context.fill(0.01f * static_cast<float>(i));
    chunks.push_back(random_audio(512, 10 + i, 0.1f * static_cast<float>(i + 1)));
  }
  for (int i = 0; i < kStreams; ++i) {
    ptrs.push_back(&states[i]);
    chunk_ptrs.push_back(chunks[i].data());
  }
  std::vector<float> probs(kStreams);
  vad.run(16000, ptrs, chunk_ptrs, probs);
  for (int i = 0; i < kStreams; ++i) {
    const double sum = 64 * 0.01 * i + std::accumulate(chunks[i].begin(), chunks[i].end(), 0.0);
    EXPECT_NEAR(probs[i], sigmoid(sum / 576.0), 1e-6) << "stream " << i;
    for (float s : states[i].state) ASSERT_NEAR(s, static_cast<float>(i) + probs[i], 1e-5) << i;
  }
}

TEST(SileroVadContract, RejectsBadArguments) {
  EXPECT_THROW(silero_chunk_samples(44100), Error);
  EXPECT_THROW(make_vad(generated_model("silero_contract.onnx"), 0), Error);
  SileroVad vad = make_vad(generated_model("silero_contract.onnx"), 2);
  std::vector<SileroStreamState> states(3);
  std::vector<SileroStreamState*> ptrs{&states[0], &states[1], &states[2]};
  std::vector<float> chunk(512);
  std::vector<const float*> chunk_ptrs(3, chunk.data());
  std::vector<float> probs(3);
  try {
    vad.run(16000, ptrs, chunk_ptrs, probs);
    FAIL() << "a batch over max_batch must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(SileroVadContract, AFailedRunIsARuntimeErrorAndLeavesStatesUnchanged) {
  // silero_failing.onnx reshapes its output to [4, 1]: any other batch size fails inside ORT.
  SileroVad vad = make_vad(generated_model("silero_failing.onnx"), 8);
  std::vector<SileroStreamState> states(2);
  states[0].state.fill(3.0f);
  std::vector<SileroStreamState*> ptrs{&states[0], &states[1]};
  const auto chunk = random_audio(512, 3);
  std::vector<const float*> chunk_ptrs(2, chunk.data());
  std::vector<float> probs(2, -1.0f);
  try {
    vad.run(16000, ptrs, chunk_ptrs, probs);
    FAIL() << "expected the run to fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("silero_failing.onnx"), std::string::npos) << e.what();
  }
  for (float s : states[0].state) ASSERT_EQ(s, 3.0f);
  for (float c : states[0].context) ASSERT_EQ(c, 0.0f);
  // The same adapter still runs a batch the model accepts.
  std::vector<SileroStreamState> four(4);
  std::vector<SileroStreamState*> four_ptrs{&four[0], &four[1], &four[2], &four[3]};
  std::vector<const float*> four_chunks(4, chunk.data());
  std::vector<float> four_probs(4);
  EXPECT_NO_THROW(vad.run(16000, four_ptrs, four_chunks, four_probs));
}

// "silero_vad_v5.flat.onnx", 16000 -> silero_vad_v5_flat_16000 (test names must be identifiers).
std::string model_rate_name(const testing::TestParamInfo<std::tuple<const char*, int>>& info) {
  std::string name = std::string(std::get<0>(info.param)) + "_" + std::to_string(std::get<1>(info.param));
  for (char& c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  }
  return name;
}

// Real model: a stream's probabilities do not depend on which other streams share its batch.
class SileroVadReal : public testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(SileroVadReal, BatchInvariance) {
  const auto [model, rate] = GetParam();
  SileroVad vad = make_vad(bundled_model(model), 16);
  const Audio speech = load_audio(test::sample_wav());
  const std::size_t chunk = static_cast<std::size_t>(silero_chunk_samples(rate));
  constexpr int kStreams = 11;
  constexpr int kChunks = 40;
  // Stream i reads the recording from its own offset, so every row of a batch differs.
  auto chunk_of = [&](int stream, int c) {
    return speech.samples.data() + static_cast<std::size_t>(stream) * 7919 + static_cast<std::size_t>(c) * chunk;
  };
  std::vector<std::vector<float>> alone(kStreams);
  for (int s = 0; s < kStreams; ++s) {
    SileroStreamState state;
    SileroStreamState* sp = &state;
    for (int c = 0; c < kChunks; ++c) {
      const float* data = chunk_of(s, c);
      float p = 0;
      vad.run(rate, std::span(&sp, 1), std::span(&data, 1), std::span(&p, 1));
      alone[s].push_back(p);
    }
  }
  // Batched: all streams together, and in a rotating subset so batch size and position vary.
  std::vector<SileroStreamState> states(kStreams);
  std::vector<int> next_chunk(kStreams, 0);
  float max_diff = 0;
  for (int round = 0; round < kChunks * 3; ++round) {
    std::vector<SileroStreamState*> ptrs;
    std::vector<const float*> chunks;
    std::vector<int> ids;
    for (int s = 0; s < kStreams; ++s) {
      const bool include = (round + s) % 3 != 0 || round >= kChunks * 2;
      if (include && next_chunk[s] < kChunks) {
        ids.push_back(s);
        ptrs.push_back(&states[s]);
        chunks.push_back(chunk_of(s, next_chunk[s]));
      }
    }
    if (ids.empty()) continue;
    std::vector<float> probs(ids.size());
    vad.run(rate, ptrs, chunks, probs);
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const int s = ids[k];
      max_diff = std::max(max_diff, std::abs(probs[k] - alone[s][next_chunk[s]]));
      ++next_chunk[s];
    }
  }
  for (int s = 0; s < kStreams; ++s) ASSERT_EQ(next_chunk[s], kChunks);
  EXPECT_LE(max_diff, 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(Models, SileroVadReal,
                         testing::Values(std::make_tuple("silero_vad_v5.onnx", 16000),
                                         std::make_tuple("silero_vad_v6.onnx", 16000),
                                         std::make_tuple("silero_vad_v5.onnx", 8000),
                                         std::make_tuple("silero_vad_v5.flat.onnx", 16000),
                                         std::make_tuple("silero_vad_v6.flat.onnx", 16000),
                                         std::make_tuple("silero_vad_v6.flat.onnx", 8000)),
                         model_rate_name);

// tools/flatten_silero.py rewrites the graph for batching and keeps the weights: every
// probability of a real recording, at both rates, within float rounding of the exported graph.
class FlatSileroMatchesExported : public testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(FlatSileroMatchesExported, OnARealRecording) {
  const auto [version, rate] = GetParam();
  SileroVad exported = make_vad(bundled_model(std::string("silero_vad_") + version + ".onnx"));
  SileroVad flat = make_vad(bundled_model(std::string("silero_vad_") + version + ".flat.onnx"));
  const Audio speech = load_audio(test::sample_wav());
  std::vector<float> samples = speech.samples;
  if (rate == 8000) {  // every other sample: a crude 8 kHz signal is enough to compare graphs
    for (std::size_t i = 0; i < samples.size() / 2; ++i) samples[i] = samples[2 * i];
    samples.resize(samples.size() / 2);
  }
  const auto want = exported.probabilities(samples, rate);
  const auto got = flat.probabilities(samples, rate);
  ASSERT_EQ(got.size(), want.size());
  float max_diff = 0;
  int speech_chunks = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(got[i] - want[i]));
    speech_chunks += want[i] > 0.5f;
  }
  EXPECT_LE(max_diff, 1e-4f);
  EXPECT_GT(speech_chunks, static_cast<int>(got.size() / 4));  // the recording exercises both states
}

INSTANTIATE_TEST_SUITE_P(Models, FlatSileroMatchesExported,
                         testing::Values(std::make_tuple("v5", 16000), std::make_tuple("v6", 16000),
                                         std::make_tuple("v5", 8000), std::make_tuple("v6", 8000)),
                         model_rate_name);

TEST(SileroVadReal, SpeechScoresHighAndSilenceLow) {
  SileroVad vad = make_vad(bundled_model("silero_vad_v5.onnx"));
  const Audio speech = load_audio(test::sample_wav());
  const auto probs = vad.probabilities(speech.samples, 16000);
  EXPECT_EQ(probs.size(), (speech.samples.size() + 511) / 512);
  const auto silence_probs = vad.probabilities(std::vector<float>(16000, 0.0f), 16000);
  for (float p : silence_probs) EXPECT_LT(p, 0.1f);
  EXPECT_GT(*std::max_element(probs.begin(), probs.end()), 0.9f);
}

}  // namespace
}  // namespace brisvox
