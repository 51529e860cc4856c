// brisvox's WinogradConv operator (models/tts/piper/winograd_op.h) inside ONNX Runtime, and pass 6 of
// tools/piper/conv2d_rewrite.py that writes it: a generated HiFi-GAN stage
// (tools/piper/make_resblock_models.py, random weights) and its rewrite give the same output;
// models that misuse the operator are refused at load with the reason.
#include <gtest/gtest.h>

#include <onnxruntime_cxx_api.h>

#include <array>
#include <cmath>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "brisvox/error.h"
#include "models/tts/piper/winograd_op.h"
#include "runtime/model_session.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using runtime::ModelSession;

std::vector<float> run_stage(ModelSession& session, std::vector<float> x, int64_t batch, int64_t length) {
  const std::array<int64_t, 3> shape{batch, 32, length};
  Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  Ort::Value input = Ort::Value::CreateTensor<float>(cpu, x.data(), x.size(), shape.data(), shape.size());
  const char* in_name = "x";
  const char* out_name = "y";
  auto out = session.session().Run(session.run_options(), &in_name, &input, 1, &out_name, 1);
  const float* y = out[0].GetTensorData<float>();
  return {y, y + out[0].GetTensorTypeAndShapeInfo().GetElementCount()};
}

TEST(PiperWinogradOp, TheRewrittenStageGivesTheOriginalOutput) {
  const std::string original = test::generated_model("resblock_stage.onnx");
  const std::string rewritten = test::generated_model("resblock_stage.conv2d.onnx");
  {
    std::ifstream in(rewritten, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_NE(bytes.find("WinogradConv"), std::string::npos) << rewritten << " has no WinogradConv node";
  }
  piper::register_winograd_op();
  SessionConfig config;
  config.intra_op_threads = 1;
  ModelSession a = ModelSession::load_file(original, config);
  ModelSession b = ModelSession::load_file(rewritten, config);
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  for (const auto& [batch, length] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {1, 37}, {1, 1000}, {2, 300}}) {
    std::vector<float> x(size_t(batch * 32 * length));
    for (auto& v : x) v = nd(rng);
    const std::vector<float> want = run_stage(a, x, batch, length);
    const std::vector<float> got = run_stage(b, x, batch, length);
    ASSERT_EQ(want.size(), got.size());
    double worst = 0, scale = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      worst = std::max(worst, double(std::fabs(want[i] - got[i])));
      scale = std::max(scale, double(std::fabs(want[i])));
    }
    EXPECT_LT(worst, 1e-4 * std::max(1.0, scale)) << "N=" << batch << " T=" << length << " (outputs up to " << scale << ")";
  }
}

std::string load_error(const std::string& name) {
  piper::register_winograd_op();
  try {
    ModelSession::load_file(test::generated_model(name), SessionConfig{});
  } catch (const Error& e) {
    return e.what();
  }
  return "(loaded)";
}

TEST(PiperWinogradOp, AWeightThatIsNotAnInitializerIsRefusedAtLoad) {
  EXPECT_NE(load_error("winograd_weight_input.onnx").find("must be a constant initializer"), std::string::npos)
      << load_error("winograd_weight_input.onnx");
}

TEST(PiperWinogradOp, ATapCountWithoutAFormIsRefusedAtLoad) {
  EXPECT_NE(load_error("winograd_four_taps.onnx").find("3, 5 and 7 taps, not 4"), std::string::npos)
      << load_error("winograd_four_taps.onnx");
}

}  // namespace
}  // namespace brisvox
