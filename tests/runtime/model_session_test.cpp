#include "runtime/model_session.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "brisvox/error.h"
#include "brisvox/log.h"
#include "brisvox/models/vad/silero_vad.h"
#include "brisvox/runtime/runtime_info.h"
#include "runtime/model_signature.h"
#include "runtime/onnx_header.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using runtime::ModelSession;
using test::bundled_model;
using test::generated_model;

std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

template <typename F>
Error expect_error(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected a brisvox::Error";
  return Error(ErrorCode::kInternal, "none");
}

TEST(ModelSession, LoadsFileAndDescribesIt) {
  auto s = ModelSession::load_file(generated_model("add_one.onnx"), {});
  const ModelInfo& info = s.info();
  ASSERT_EQ(info.inputs.size(), 1u);
  EXPECT_EQ(info.inputs[0].name, "x");
  EXPECT_EQ(info.inputs[0].type, ElementType::kFloat32);
  EXPECT_EQ(info.inputs[0].shape_string(), "[1,4]");
  ASSERT_EQ(info.outputs.size(), 1u);
  EXPECT_EQ(info.outputs[0].name, "y");
  EXPECT_EQ(info.default_opset(), 16);
  EXPECT_EQ(info.ir_version, 8);
  EXPECT_EQ(info.producer_name, "brisvox-tests");
  EXPECT_EQ(s.providers(), std::vector<std::string>{"CPUExecutionProvider"});
}

TEST(ModelSession, LoadsFromMemoryWithTheSameDescription) {
  const auto bytes = read_bytes(generated_model("add_one.onnx"));
  auto s = ModelSession::load_memory(bytes, "add_one (memory)", {});
  EXPECT_EQ(s.info().source, "add_one (memory)");
  EXPECT_EQ(s.info().default_opset(), 16);
  EXPECT_EQ(s.info().inputs[0].shape_string(), "[1,4]");
}

TEST(ModelSession, ReadsOpsetAndProducerOfTheSileroModels) {
  for (const char* name : {"silero_vad_v5.onnx", "silero_vad_v6.onnx"}) {
    auto s = ModelSession::load_file(bundled_model(name), {});
    EXPECT_EQ(s.info().default_opset(), 16) << name;
    EXPECT_EQ(s.info().producer_name, "spox") << name;
    EXPECT_EQ(s.info().inputs.size(), 3u) << name;
  }
}

TEST(OnnxOpTypes, ReadsTheMainGraphsNodesAndRefusesGarbage) {
  EXPECT_EQ(runtime::read_onnx_op_types(generated_model("add_one.onnx")), std::set<std::string>{"Add"});
  // silero_slow: its Loop's MatMul lives in a subgraph, which is not the main graph.
  const auto slow = runtime::read_onnx_op_types(generated_model("silero_slow.onnx"));
  ASSERT_TRUE(slow.has_value());
  EXPECT_EQ(slow->count("If"), 1u);
  EXPECT_EQ(slow->count("MatMul"), 0u);
  EXPECT_FALSE(runtime::read_onnx_op_types("/nonexistent/model.onnx").has_value());
  const std::string garbage = ::testing::TempDir() + "brisvox_garbage.onnx";
  {
    std::ofstream out(garbage, std::ios::binary);
    out << "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff not a model";
  }
  EXPECT_FALSE(runtime::read_onnx_op_types(garbage).has_value());
}

TEST(ModelSession, MissingFileIsAnIoErrorNamingThePath) {
  const Error e = expect_error([] { ModelSession::load_file("/nonexistent/model.onnx", {}); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
  EXPECT_NE(std::string(e.what()).find("/nonexistent/model.onnx"), std::string::npos) << e.what();
}

TEST(ModelSession, GarbageFileIsABadModelNamingThePath) {
  const std::string path = testing::TempDir() + "/garbage.onnx";
  std::ofstream(path) << "this is not an onnx model, just some text bytes";
  const Error e = expect_error([&] { ModelSession::load_file(path, {}); });
  EXPECT_EQ(e.code(), ErrorCode::kBadModel);
  EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
}

TEST(ModelSession, TruncatedModelIsABadModel) {
  auto bytes = read_bytes(bundled_model("silero_vad_v5.onnx"));
  bytes.resize(bytes.size() / 3);
  const Error e = expect_error([&] { ModelSession::load_memory(bytes, "truncated.onnx", {}); });
  EXPECT_EQ(e.code(), ErrorCode::kBadModel);
  EXPECT_NE(std::string(e.what()).find("truncated.onnx"), std::string::npos) << e.what();
}

TEST(ModelSession, EmptyMemoryIsABadModel) {
  const Error e = expect_error([] { ModelSession::load_memory({}, "empty", {}); });
  EXPECT_EQ(e.code(), ErrorCode::kBadModel);
}

TEST(ModelSession, DirectoryIsNotAModel) {
  const Error e = expect_error([] { ModelSession::load_file(testing::TempDir(), {}); });
  EXPECT_EQ(e.code(), ErrorCode::kIo);
}

TEST(ModelSession, UnavailableProviderIsAnErrorByDefault) {
  SessionConfig config;
  config.providers = {"cuda"};
  const Error e = expect_error([&] { ModelSession::load_file(generated_model("add_one.onnx"), config); });
  EXPECT_EQ(e.code(), ErrorCode::kProviderUnavailable);
  EXPECT_NE(std::string(e.what()).find("CUDAExecutionProvider"), std::string::npos) << e.what();
}

TEST(ModelSession, UnavailableProviderWarnsLoudlyWhenAllowed) {
  std::mutex mu;
  std::vector<std::string> warnings;
  set_log_sink([&](LogLevel level, std::string_view message) {
    std::lock_guard lock(mu);
    if (level == LogLevel::kWarn) warnings.emplace_back(message);
  });
  SessionConfig config;
  config.providers = {"tensorrt", "cpu"};
  config.on_unavailable_provider = ProviderFallback::kWarn;
  auto s = ModelSession::load_file(generated_model("add_one.onnx"), config);
  set_log_sink(nullptr);
  EXPECT_EQ(s.providers(), std::vector<std::string>{"CPUExecutionProvider"});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("TensorrtExecutionProvider"), std::string::npos) << warnings[0];
}

TEST(ModelSession, InvalidThreadCountsAreRejected) {
  SessionConfig config;
  config.intra_op_threads = -2;
  const Error e = expect_error([&] { ModelSession::load_file(generated_model("add_one.onnx"), config); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(std::string(e.what()).find("intra_op_threads"), std::string::npos);
}

TEST(ModelSession, OneIntraOpThreadAddsNoThreads) {
  // The whole point of intra_op_threads = 1: ORT runs on the calling worker and creates no pool.
  ort_initialize();  // the Env's own thread is a fixed, once-per-process extra
  const int before = process_thread_count();
  SileroConfig config;
  config.model_path = bundled_model("silero_vad_v5.onnx");
  SileroVad vad(config);
  std::vector<float> audio(16000, 0.01f);
  (void)vad.probabilities(audio, 16000);
  (void)vad.probabilities(audio, 8000);
  EXPECT_EQ(process_thread_count(), before);
}

TEST(ModelSession, TheEnvironmentAddsAtMostOneThreadOnce) {
  const int before = process_thread_count();
  ort_initialize();
  const int after = process_thread_count();
  EXPECT_LE(after - before, 1);
  ort_initialize();
  EXPECT_EQ(process_thread_count(), after);
}

TEST(ModelSignature, NarrowStateIsNamedWithBothShapes) {
  SileroConfig config;
  config.model_path = generated_model("silero_narrow_state.onnx");
  const Error e = expect_error([&] { SileroVad vad(config); });
  EXPECT_EQ(e.code(), ErrorCode::kModelMismatch);
  EXPECT_NE(std::string(e.what()).find("has input 'state' of shape [2,?,64], expected [2,?,128]"),
            std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find("silero_narrow_state.onnx"), std::string::npos) << e.what();
}

TEST(ModelSignature, MissingInputIsNamed) {
  SileroConfig config;
  config.model_path = generated_model("silero_int_sr_missing.onnx");
  const Error e = expect_error([&] { SileroVad vad(config); });
  EXPECT_EQ(e.code(), ErrorCode::kModelMismatch);
  EXPECT_NE(std::string(e.what()).find("has no input 'sr'"), std::string::npos) << e.what();
}

TEST(ModelSignature, LegacySileroModelIsRefusedWithAReason) {
  SileroConfig config;
  config.model_path = bundled_model("silero_vad_legacy.onnx");
  const Error e = expect_error([&] { SileroVad vad(config); });
  EXPECT_EQ(e.code(), ErrorCode::kModelMismatch);
  EXPECT_NE(std::string(e.what()).find("'state'"), std::string::npos) << e.what();
}

TEST(ModelSignature, WrongElementTypeIsNamed) {
  ModelInfo info;
  info.source = "m.onnx";
  info.inputs = {{"x", ElementType::kInt64, {1, 4}, {}}};
  runtime::ModelSignature sig{"Test", {{"x", ElementType::kFloat32, {1, 4}}}, {}};
  const Error e = expect_error([&] { runtime::check_signature(info, sig); });
  EXPECT_EQ(std::string(e.what()), "model 'm.onnx' has input 'x' of type int64, expected float32 (Test)");
}

TEST(ModelSignature, ExtraInputIsRefusedExtraOutputAccepted) {
  ModelInfo info;
  info.source = "m.onnx";
  info.inputs = {{"x", ElementType::kFloat32, {-1}, {}}, {"y", ElementType::kFloat32, {1}, {}}};
  info.outputs = {{"z", ElementType::kFloat32, {1}, {}}, {"debug", ElementType::kFloat32, {1}, {}}};
  runtime::ModelSignature sig{"Test", {{"x", ElementType::kFloat32, {-1}}}, {{"z", ElementType::kFloat32, {1}}}};
  const Error e = expect_error([&] { runtime::check_signature(info, sig); });
  EXPECT_NE(std::string(e.what()).find("unexpected input 'y'"), std::string::npos) << e.what();
  info.inputs.pop_back();
  EXPECT_NO_THROW(runtime::check_signature(info, sig));
}

}  // namespace
}  // namespace brisvox
