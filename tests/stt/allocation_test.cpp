// The warm path of the Whisper model layer allocates nothing in brisvox code. This binary replaces
// malloc and friends (and so every operator new) with counting versions. ONNX Runtime allocates a
// fixed number of blocks per Run of its own; as in tests/engine/allocation_test.cpp, that number
// is measured on a bare session with the same bound tensors first, and brisvox's step may add
// nothing to it.
#include <gtest/gtest.h>
#include <malloc.h>

#include <array>
#include <cstdio>
#include <vector>

#include "brisvox/audio/audio_file.h"
#include "brisvox/models/stt/whisper_decoder.h"
#include "brisvox/models/stt/whisper_encoder.h"
#include "brisvox/models/stt/whisper_features.h"
#include "brisvox/models/stt/whisper_search.h"
#include "counting_malloc.h"
#include "runtime/model_session.h"
#include "stt_test_util.h"

using brisvox::test::allocations_in;

namespace brisvox {
namespace {

constexpr int kWarmups = 10;
constexpr int kMeasured = 200;

const WhisperModel& model() {
  static const WhisperModel m = WhisperModel::load(test::whisper_test_model("whisper-test-en"));
  return m;
}

TEST(WhisperAllocations, TheCounterSeesAllocations) {
  void* volatile p = nullptr;
  const auto n = allocations_in([&] {
    p = std::malloc(100);
    std::free(p);
    p = ::operator new(64);
    ::operator delete(p);
  });
  EXPECT_GE(n, 2u) << "the replaced malloc is not in effect";
}

// ONNX Runtime's own allocations per Run of the decoder step at batch b, on a bare session whose
// inputs and outputs are preallocated exactly as WhisperDecoder binds them.
double bare_decoder_allocations_per_run(int b, int cache, int audio, int heads) {
  const WhisperDims& d = model().config().dims;
  runtime::ModelSession session = runtime::ModelSession::load_file(model().decoder_path(), {});
  const auto mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  const int64_t B = b, H = d.n_text_head, hd = d.head_dim(), C = cache, T = audio;
  std::vector<int64_t> ints(static_cast<std::size_t>(b), 1);
  std::vector<float> self(static_cast<std::size_t>(B * H * C * hd), 0.0f);
  std::vector<float> cross(static_cast<std::size_t>(B * H * T * hd), 0.0f);
  std::vector<float> logits(static_cast<std::size_t>(B * d.n_vocab));
  std::vector<float> new_kv(static_cast<std::size_t>(B * d.n_text_layer * 2 * d.n_text_state));
  std::vector<std::string> names = {"tokens", "positions", "cross_len"};
  std::vector<Ort::Value> in;
  const std::array<int64_t, 1> vec{B};
  for (int i = 0; i < 3; ++i) in.push_back(Ort::Value::CreateTensor<int64_t>(mem, ints.data(), ints.size(), vec.data(), 1));
  for (const char* kind : {"self", "cross"}) {
    for (int l = 0; l < d.n_text_layer; ++l) {
      for (const char* kv : {"k", "v"}) {
        names.push_back(std::string(kind) + "_" + kv + "_" + std::to_string(l));
        std::vector<float>& buf = kind[0] == 's' ? self : cross;
        const std::array<int64_t, 4> shape{B, H, kind[0] == 's' ? C : T, hd};
        in.push_back(Ort::Value::CreateTensor<float>(mem, buf.data(), buf.size(), shape.data(), 4));
      }
    }
  }
  std::vector<const char*> in_names;
  for (const auto& n : names) in_names.push_back(n.c_str());
  // The alignment heads' scores too, as WhisperDecoder binds them (word timestamps).
  const char* out_names[] = {"logits", "new_kv", "alignment"};
  const std::array<int64_t, 2> logits_shape{B, d.n_vocab};
  const std::array<int64_t, 4> kv_shape{B, d.n_text_layer, 2, d.n_text_state};
  const std::array<int64_t, 3> alignment_shape{B, heads, T};
  std::vector<float> alignment(static_cast<std::size_t>(B * heads * T));
  std::vector<Ort::Value> out;
  out.push_back(Ort::Value::CreateTensor<float>(mem, logits.data(), logits.size(), logits_shape.data(), 2));
  out.push_back(Ort::Value::CreateTensor<float>(mem, new_kv.data(), new_kv.size(), kv_shape.data(), 4));
  out.push_back(Ort::Value::CreateTensor<float>(mem, alignment.data(), alignment.size(), alignment_shape.data(), 3));
  auto run = [&] {
    session.session().Run(session.run_options(), in_names.data(), in.data(), in.size(), out_names, out.data(), 3);
  };
  for (int i = 0; i < kWarmups; ++i) run();
  const auto n = allocations_in([&] {
    for (int i = 0; i < kMeasured; ++i) run();
  });
  return static_cast<double>(n) / kMeasured;
}

TEST(WhisperAllocations, DecoderStepAddsNothingToOnnxRuntimes) {
  constexpr int kLanes = 4;
  WhisperDecoder decoder(model(), WhisperDecoderConfig{kLanes, 0, 0, {}});
  WhisperEncoder encoder(model(), WhisperEncoderConfig{kLanes, 100, {}});
  std::vector<float> mel(80 * 400, 0.25f);
  for (int s = 0; s < kLanes; ++s) {
    ASSERT_EQ(decoder.acquire(), s);
    const float* p = mel.data();
    const WhisperEncoderOutput out = decoder.begin(s, 200);
    encoder.run(400, std::span(&p, 1), std::span(&out, 1));
  }
  std::vector<int> tokens(kLanes, model().config().tokens.sot);
  // Sequences leave and join (release, acquire, begin) as their caches fill: the lane
  // bookkeeping is on the measured path too.
  auto one_step = [&] {
    decoder.step(tokens);
    for (int s = 0; s < kLanes; ++s) {
      tokens[static_cast<std::size_t>(s)] = 1 + (decoder.position(s) % 50);
      if (decoder.position(s) >= decoder.max_tokens() - s) {
        decoder.release(s);
        const int again = decoder.acquire();
        decoder.begin(again, 200);
      }
    }
  };
  for (int i = 0; i < kWarmups; ++i) one_step();
  const auto n = allocations_in([&] {
    for (int i = 0; i < kMeasured; ++i) one_step();
  });
  const double per_step = static_cast<double>(n) / kMeasured;
  const double bare = bare_decoder_allocations_per_run(kLanes, decoder.max_tokens(), decoder.max_audio_positions(),
                                                       decoder.alignment_heads());
  std::printf("decoder step at batch %d: %.3f allocations per step; bare ONNX Runtime Run: %.3f\n", kLanes, per_step,
              bare);
  RecordProperty("ort_allocations_per_decoder_run", std::to_string(bare));
  EXPECT_DOUBLE_EQ(per_step, bare) << "brisvox code allocated in WhisperDecoder::step";
}

TEST(WhisperAllocations, EncoderRunAllocatesOnlyWhatOnnxRuntimeDoes) {
  WhisperEncoder encoder(model(), WhisperEncoderConfig{2, 100, {}});
  std::vector<float> mel(2 * 80 * 400, 0.25f);
  std::vector<float> a(encoder.output_floats(200)), b(encoder.output_floats(200));
  const std::vector<const float*> mels = {mel.data(), mel.data() + 80 * 400};
  const std::vector<WhisperEncoderOutput> outs = {encoder.output_in(a, 200), encoder.output_in(b, 200)};
  auto run = [&] { encoder.run(400, mels, outs); };
  for (int i = 0; i < kWarmups; ++i) run();
  const auto n = allocations_in([&] {
    for (int i = 0; i < 50; ++i) run();
  });
  // The same Runs on a bare session: on the CPU the encoder runs each window alone
  // (runs_rows_alone), so two Runs of one window.
  ASSERT_TRUE(encoder.runs_rows_alone());
  runtime::ModelSession session = runtime::ModelSession::load_file(model().encoder_path(), {});
  const auto mem = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  const std::array<int64_t, 3> in_shape{1, 80, 400};
  const WhisperDims& d = model().config().dims;
  const std::array<int64_t, 6> out_shape{1, d.n_text_layer, 2, d.n_text_head, 200, d.head_dim()};
  std::vector<float> out(a.size());
  Ort::Value in_value = Ort::Value::CreateTensor<float>(mem, mel.data(), mel.size() / 2, in_shape.data(), 3);
  Ort::Value out_value = Ort::Value::CreateTensor<float>(mem, out.data(), out.size(), out_shape.data(), 6);
  const char* in_name = "mel";
  const char* out_name = "cross_kv";
  auto bare = [&] {
    for (int w = 0; w < 2; ++w) {
      session.session().Run(session.run_options(), &in_name, &in_value, 1, &out_name, &out_value, 1);
    }
  };
  for (int i = 0; i < kWarmups; ++i) bare();
  const auto m = allocations_in([&] {
    for (int i = 0; i < 50; ++i) bare();
  });
  std::printf("encoder run of 2 windows: %.2f allocations; bare ONNX Runtime Runs: %.2f\n", static_cast<double>(n) / 50.0,
              static_cast<double>(m) / 50.0);
  EXPECT_EQ(n, m) << "brisvox code allocated in WhisperEncoder::run";
}

TEST(WhisperAllocations, SearchAndFeaturesAllocateNothing) {
  const WhisperSearch search(model().config(), {});
  WhisperSequence seq(search);
  std::vector<float> logits(static_cast<std::size_t>(model().config().dims.n_vocab), 0.0f);
  WhisperFeatures features(400, 100, 100);
  const Audio audio = load_audio(test::sample_wav());
  const std::span<const float> clip(audio.samples.data(), 4 * 16000);
  std::vector<float> mel(80 * 400);
  features.compute(clip, WhisperWindow::kFit, mel);
  const auto n = allocations_in([&] {
    for (int i = 0; i < 200; ++i) {
      if (seq.done()) seq.reset();
      for (std::size_t v = 0; v < logits.size(); ++v) logits[v] = static_cast<float>((v * 7 + static_cast<std::size_t>(i)) % 13);
      seq.consume(logits);
    }
    features.compute(clip, WhisperWindow::kFull, mel);
    features.compute(clip.subspan(0, 16000), WhisperWindow::kFit, mel);
  });
  EXPECT_EQ(n, 0u);
  EXPECT_GT(seq.tokens().size() + (seq.done() ? 1u : 0u), 0u);
}

}  // namespace
}  // namespace brisvox
