#include "brisvox/error.h"

namespace brisvox {

std::string_view to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid_argument";
    case ErrorCode::kIo: return "io";
    case ErrorCode::kBadAudio: return "bad_audio";
    case ErrorCode::kUnsupportedAudio: return "unsupported_audio";
    case ErrorCode::kBadModel: return "bad_model";
    case ErrorCode::kModelMismatch: return "model_mismatch";
    case ErrorCode::kProviderUnavailable: return "provider_unavailable";
    case ErrorCode::kRuntime: return "runtime";
    case ErrorCode::kInferenceTimeout: return "inference_timeout";
    case ErrorCode::kOverloaded: return "overloaded";
    case ErrorCode::kClosed: return "closed";
    case ErrorCode::kInternal: return "internal";
    case ErrorCode::kLimitExceeded: return "limit_exceeded";
  }
  return "internal";
}

}  // namespace brisvox
