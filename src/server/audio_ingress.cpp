#include "server/audio_ingress.h"

#include <fmt/format.h>

#include <algorithm>

#include "server/ws_connection.h"

namespace brisvox::server {
namespace {

using Clock = std::chrono::steady_clock;

std::size_t quarter_second_bytes(SampleEncoding encoding, int sample_rate_hz) {
  const double bytes = static_cast<double>(bytes_per_sample(encoding)) * static_cast<double>(sample_rate_hz) / 4.0;
  return static_cast<std::size_t>(std::clamp(bytes, 512.0, 65536.0));
}

}  // namespace

AudioIngress::AudioIngress(ServerContext& ctx, SampleEncoding encoding, int sample_rate_hz)
    : ctx_(ctx),
      sample_rate_hz_(sample_rate_hz),
      decoder_(encoding, sample_rate_hz),
      rate_(ctx.config.limits.max_rate, ctx.config.limits.burst_s),
      read_chunk_bytes_(quarter_second_bytes(encoding, sample_rate_hz)) {
  decoded_.resize(decoder_.max_samples_for(read_chunk_bytes_));
  const auto limit =
      static_cast<std::size_t>(static_cast<double>(sample_rate_hz) * ctx.config.limits.pending_ms / 1000.0);
  pending_limit_samples_ = std::max(limit, 2 * decoded_.size());
  pending_.reserve(pending_limit_samples_);
}

std::optional<IngressFailure> AudioIngress::receive(std::span<const std::byte> bytes) {
  if (bytes.empty()) return std::nullopt;
  ctx_.metrics.audio_bytes_received.fetch_add(bytes.size(), std::memory_order_relaxed);
  std::size_t n = 0;
  try {
    n = decoder_.decode(bytes, decoded_);
  } catch (const Error& e) {
    return IngressFailure{std::string(to_string(e.code())), kCloseBadData, e.what()};
  }
  rate_.consume(static_cast<double>(n) / sample_rate_hz_);
  const std::size_t held = pending_.size() - pending_begin_;
  if (held + n > pending_limit_samples_) {
    const ServerLimits& l = ctx_.config.limits;
    return IngressFailure{
        "rate_limited", kClosePolicy,
        fmt::format("{:.2f} s of audio is waiting for the engine, more than the {} ms the server holds per stream; "
                    "send audio at most {} x real time and in messages of at most {} ms",
                    static_cast<double>(held + n) / sample_rate_hz_, l.pending_ms, l.max_rate, l.pending_ms / 2)};
  }
  if (pending_begin_ > 0 && pending_begin_ == pending_.size()) {
    pending_.clear();
    pending_begin_ = 0;
  }
  if (pending_begin_ == pending_.size()) pending_since_ = Clock::now();
  pending_.insert(pending_.end(), decoded_.begin(), decoded_.begin() + static_cast<std::ptrdiff_t>(n));
  ctx_.metrics.audio_samples_received.fetch_add(n, std::memory_order_relaxed);
  samples_ += n;
  return std::nullopt;
}

std::optional<IngressFailure> AudioIngress::check_held() const {
  if (!holding()) return std::nullopt;
  const int timeout_ms = ctx_.config.limits.pending_timeout_ms;
  if (Clock::now() - pending_since_ <= std::chrono::milliseconds(timeout_ms)) return std::nullopt;
  return IngressFailure{"overloaded", kCloseTryLater,
                        fmt::format("the engine took none of this stream's audio for {} ms; try again later", timeout_ms)};
}

void AudioIngress::discard(AudioLoss why) {
  const std::size_t held = pending_.size() - pending_begin_;
  if (held > 0) ctx_.metrics.count_loss(why, held);
  pending_.clear();
  pending_begin_ = 0;
}

void AudioIngress::discard(WsConnection::Ending ending) {
  switch (ending) {
    case WsConnection::Ending::kDisconnected:
      discard(AudioLoss::kDisconnected);
      break;
    case WsConnection::Ending::kFailed:
      discard(AudioLoss::kError);
      break;
    case WsConnection::Ending::kAborted:
      discard(AudioLoss::kShutdown);
      break;
  }
}

std::optional<IngressFailure> AudioIngress::push_failed(const Error& e) {
  return IngressFailure{std::string(to_string(e.code())),
                        e.code() == ErrorCode::kBadAudio ? kCloseBadData : kCloseInternal, e.what()};
}

void AudioIngress::compact() {
  if (pending_begin_ == pending_.size()) {
    pending_.clear();
    pending_begin_ = 0;
  } else if (pending_begin_ > pending_.size() / 2) {
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(pending_begin_));
    pending_begin_ = 0;
  }
}

}  // namespace brisvox::server
