#include "server/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace brisvox::server {

void RateLimiter::refill(Clock::time_point now) {
  const double elapsed_s = std::chrono::duration<double>(now - last_).count();
  if (elapsed_s > 0) {
    tokens_s_ = std::min(burst_s_, tokens_s_ + elapsed_s * max_rate_);
    last_ = now;
  }
}

void RateLimiter::consume(double audio_s, Clock::time_point now) {
  refill(now);
  tokens_s_ -= audio_s;
}

std::chrono::microseconds RateLimiter::wait_time(Clock::time_point now) {
  refill(now);
  if (tokens_s_ >= 0) return std::chrono::microseconds(0);
  return std::chrono::microseconds(static_cast<long long>(std::ceil(-tokens_s_ / max_rate_ * 1e6)));
}

}  // namespace brisvox::server
