// How fast a client may send audio: a token bucket over seconds of audio.
//
// The bucket holds at most burst_s seconds and refills at max_rate seconds of audio per second of
// wall time, so over any window of T seconds a client can send max_rate * T + burst_s seconds of
// audio. consume() may take the bucket below zero (a message is never split); the session then
// waits wait_time() before it reads the socket again, which paces the client through TCP.
// Not thread-safe (one session strand).
#pragma once

#include <chrono>

namespace brisvox::server {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  RateLimiter(double max_rate, double burst_s, Clock::time_point now = Clock::now())
      : max_rate_(max_rate), burst_s_(burst_s), tokens_s_(burst_s), last_(now) {}

  // Takes `audio_s` seconds of audio out of the bucket.
  void consume(double audio_s, Clock::time_point now = Clock::now());
  // How long until the bucket is no longer negative (zero: read now).
  std::chrono::microseconds wait_time(Clock::time_point now = Clock::now());

 private:
  void refill(Clock::time_point now);
  double max_rate_;
  double burst_s_;
  double tokens_s_;
  Clock::time_point last_;
};

}  // namespace brisvox::server
