// Paths of test inputs, from compile definitions set in tests/CMakeLists.txt.
#pragma once

#include <string>

namespace brisvox::test {

inline std::string data_path(const std::string& rel) { return std::string(BRISVOX_TEST_DATA_DIR) + "/" + rel; }
inline std::string generated_model(const std::string& name) {
  return std::string(BRISVOX_GENERATED_MODELS_DIR) + "/" + name;
}
inline std::string bundled_model(const std::string& name) {
  return std::string(BRISVOX_TEST_MODELS_DIR) + "/" + name;
}
inline std::string third_party(const std::string& rel) {
  return std::string(BRISVOX_THIRD_PARTY_DIR) + "/" + rel;
}
inline std::string sample_wav() { return third_party("audio/sample.wav"); }

}  // namespace brisvox::test
