// brisvox::Error: the one exception type the library throws.
//
// Every failure a user can cause (bad audio, a bad model file, a bad parameter, an overloaded
// engine) is reported as an Error whose message says what was wrong and, where it helps, what to
// do about it: "model 'x.onnx' has input 'state' of shape [2,?,64], expected [2,?,128]". The code
// is stable and machine-readable (the server sends it in error events); the message is for people.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace brisvox {

enum class ErrorCode : std::uint8_t {
  kInvalidArgument,      // a parameter or option is out of range or malformed
  kIo,                   // a file could not be opened, read or written
  kBadAudio,             // audio data is empty, truncated, corrupt or holds NaN/Inf samples
  kUnsupportedAudio,     // a format, encoding or rate brisvox does not handle
  kBadModel,             // a model file cannot be loaded by ONNX Runtime
  kModelMismatch,        // a model loads but its inputs/outputs are not what the adapter needs
  kProviderUnavailable,  // a requested execution provider is not in this ONNX Runtime build
  kRuntime,              // ONNX Runtime failed while running a model
  kInferenceTimeout,     // a model run took longer than its deadline and was cancelled
  kOverloaded,           // the engine is at capacity or a stream fell behind its budget
  kClosed,               // the object was used after it was closed
  kInternal,             // a bug in brisvox: please report it
  kLimitExceeded,        // an input is larger or longer than a configured limit allows
};

// Stable snake_case name of a code ("bad_audio"), used in logs and protocol messages.
std::string_view to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace brisvox
