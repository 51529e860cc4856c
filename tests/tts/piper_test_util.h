// Shared by the Piper tests: the real voice (scripts/setup.sh puts it in third_party/models/piper)
// and one PiperTts per test binary (loading the 63 MB model takes a second).
#pragma once

#include <memory>
#include <string>

#include "brisvox/models/tts/piper_tts.h"
#include "test_paths.h"

namespace brisvox::test {

inline std::string piper_voice_path() { return third_party("models/piper/en_US-joe-medium.onnx"); }
inline std::string piper_durations_voice_path() {
  return third_party("models/piper/en_US-joe-medium.durations.onnx");
}

// A shared PiperTts for tests that do not care about its state (created on first use).
inline PiperTts& shared_piper() {
  static std::unique_ptr<PiperTts> tts = [] {
    PiperTtsConfig c;
    c.model_path = piper_voice_path();
    return std::make_unique<PiperTts>(c);
  }();
  return *tts;
}

}  // namespace brisvox::test
