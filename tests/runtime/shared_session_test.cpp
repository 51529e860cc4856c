// SessionConfig::share: the workers of one model run one ONNX Runtime session. What must hold:
// the same file and config give the same session and nothing else does, concurrent runs give the
// outputs a session of one's own gives, and cancelling one user's run leaves the others' alone.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "runtime/model_session.h"
#include "test_paths.h"

namespace brisvox {
namespace {

using runtime::ModelSession;
using test::generated_model;

SessionConfig shared_config() {
  SessionConfig c;
  c.share = true;
  return c;
}

// add_one.onnx: y = x + 1 over a [1, 4] float tensor.
std::array<float, 4> add_one(ModelSession& s, std::array<float, 4> x) {
  const std::array<int64_t, 2> shape{1, 4};
  const auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::array<float, 4> y{};
  Ort::Value in = Ort::Value::CreateTensor<float>(memory, x.data(), x.size(), shape.data(), shape.size());
  Ort::Value out = Ort::Value::CreateTensor<float>(memory, y.data(), y.size(), shape.data(), shape.size());
  const char* in_name = "x";
  const char* out_name = "y";
  s.session().Run(s.run_options(), &in_name, &in, 1, &out_name, &out, 1);
  return y;
}

TEST(SharedSession, TheSameFileAndConfigGiveOneSession) {
  auto a = ModelSession::load_file(generated_model("add_one.onnx"), shared_config());
  auto b = ModelSession::load_file(generated_model("add_one.onnx"), shared_config());
  EXPECT_EQ(&a.session(), &b.session());
  EXPECT_EQ(a.session_users(), 2);
  EXPECT_EQ(b.info().inputs[0].name, "x");  // the second user gets the description too
  EXPECT_EQ(b.providers(), a.providers());
  {
    auto c = ModelSession::load_file(generated_model("add_one.onnx"), shared_config());
    EXPECT_EQ(a.session_users(), 3);
  }
  EXPECT_EQ(a.session_users(), 2);
}

TEST(SharedSession, AnotherConfigOrNoSharingGivesASessionOfItsOwn) {
  auto a = ModelSession::load_file(generated_model("add_one.onnx"), shared_config());
  SessionConfig two_threads = shared_config();
  two_threads.intra_op_threads = 2;
  auto b = ModelSession::load_file(generated_model("add_one.onnx"), two_threads);
  SessionConfig arena = shared_config();
  arena.cpu_arena = true;
  auto c = ModelSession::load_file(generated_model("add_one.onnx"), arena);
  auto d = ModelSession::load_file(generated_model("add_one.onnx"), SessionConfig{});
  EXPECT_NE(&a.session(), &b.session());
  EXPECT_NE(&a.session(), &c.session());
  EXPECT_NE(&a.session(), &d.session());
  EXPECT_EQ(a.session_users(), 1);
  EXPECT_EQ(d.session_users(), 1);
}

TEST(SharedSession, ARewrittenFileIsAnotherModel) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "brisvox_shared_session_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.onnx").string();
  std::filesystem::copy_file(generated_model("add_one.onnx"), path,
                             std::filesystem::copy_options::overwrite_existing);
  auto a = ModelSession::load_file(path, shared_config());
  // Replaced in place (a new inode, as an installer's rename gives): the next load is a new session.
  const std::string replacement = path + ".new";
  std::filesystem::copy_file(generated_model("add_one.onnx"), replacement,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::rename(replacement, path);
  auto b = ModelSession::load_file(path, shared_config());
  EXPECT_NE(&a.session(), &b.session());
  std::filesystem::remove_all(dir);
}

TEST(SharedSession, ConcurrentRunsGiveWhatASessionOfOnesOwnGives) {
  std::vector<ModelSession> users;
  for (int i = 0; i < 4; ++i) users.push_back(ModelSession::load_file(generated_model("add_one.onnx"), shared_config()));
  ASSERT_EQ(users[0].session_users(), 4);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const float base = static_cast<float>(t * 100000 + i);
        const auto y = add_one(users[t], {base, base + 1, base + 2, base + 3});
        for (int k = 0; k < 4; ++k) {
          if (y[k] != base + static_cast<float>(k) + 1.0f) wrong.fetch_add(1);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// silero_slow.onnx runs for minutes when an input row's mean exceeds 0.75, and returns at once
// otherwise: one user's run can be cancelled while another's goes on.
TEST(SharedSession, CancellingOneUsersRunLeavesTheOthersAlone) {
  auto slow_user = ModelSession::load_file(generated_model("silero_slow.onnx"), shared_config());
  auto fast_user = ModelSession::load_file(generated_model("silero_slow.onnx"), shared_config());
  ASSERT_EQ(&slow_user.session(), &fast_user.session());
  const auto memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  const std::array<int64_t, 2> input_shape{1, 512};
  const std::array<int64_t, 3> state_shape{2, 1, 128};
  const std::array<int64_t, 2> output_shape{1, 1};
  const std::array<const char*, 3> in_names{"sr", "state", "input"};
  const std::array<const char*, 2> out_names{"output", "stateN"};
  // Returns the probability: sigmoid of the row's mean.
  const auto run = [&](ModelSession& s, float value) {
    int64_t sr = 16000;
    std::vector<float> input(512, value);
    std::vector<float> state(2 * 128, 0.0f);
    std::vector<float> state_n(2 * 128, 0.0f);
    float probability = -1.0f;
    std::array<Ort::Value, 3> in{Ort::Value::CreateTensor<int64_t>(memory, &sr, 1, nullptr, 0),
                                 Ort::Value::CreateTensor<float>(memory, state.data(), state.size(), state_shape.data(), 3),
                                 Ort::Value::CreateTensor<float>(memory, input.data(), input.size(), input_shape.data(), 2)};
    std::array<Ort::Value, 2> out{Ort::Value::CreateTensor<float>(memory, &probability, 1, output_shape.data(), 2),
                                  Ort::Value::CreateTensor<float>(memory, state_n.data(), state_n.size(), state_shape.data(), 3)};
    s.session().Run(s.run_options(), in_names.data(), in.data(), 3, out_names.data(), out.data(), 2);
    return probability;
  };

  std::atomic<bool> slow_failed{false};
  std::thread slow([&] {
    try {
      run(slow_user, 1.0f);
    } catch (const Ort::Exception&) {
      slow_failed = true;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the slow run is in its loop
  EXPECT_FLOAT_EQ(run(fast_user, 0.0f), 0.5f);                  // sigmoid(0), beside it
  const auto cancelled_at = std::chrono::steady_clock::now();
  slow_user.cancel_run();
  slow.join();
  EXPECT_TRUE(slow_failed.load());
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, std::chrono::seconds(30));
  EXPECT_FLOAT_EQ(run(fast_user, 0.0f), 0.5f);  // the other user's flag was never set
  slow_user.clear_cancel();
  EXPECT_FLOAT_EQ(run(slow_user, 0.0f), 0.5f);
}

}  // namespace
}  // namespace brisvox
