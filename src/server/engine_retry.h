// When a handler's audio or flush meets an engine that cannot take it now: which errors mean
// "come back later", and how soon to come back when no engine progress wakes the handler first.
#pragma once

#include <chrono>

#include "brisvox/error.h"

namespace brisvox::server {

// A frame is 32 ms; 5 ms keeps the added delay small without spinning.
inline constexpr auto kEngineRetryInterval = std::chrono::milliseconds(5);

// An engine that is full or stopping is a reason to come back later; anything else is not.
inline bool engine_busy(const Error& e) {
  return e.code() == ErrorCode::kOverloaded || e.code() == ErrorCode::kClosed;
}

}  // namespace brisvox::server
