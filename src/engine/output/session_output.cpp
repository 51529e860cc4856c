#include "engine/output/session_output.h"

namespace brisvox::engine {

SessionOutput::SessionOutput(std::size_t event_capacity, std::size_t payload_bytes, std::function<void()> on_events,
                             std::shared_ptr<ReaderWake> shared_wake)
    : events_(event_capacity),
      shared_wake_(std::move(shared_wake)),
      payloads_(payload_bytes > 0 ? std::make_unique<PayloadChannel>(payload_bytes) : nullptr),
      on_events_(std::move(on_events)) {}

bool SessionOutput::emit(const Event& event) {
  const std::size_t free = events_.free_space();
  const bool droppable = event.type == EventType::kVadProbability;
  if (free == 0 || (droppable && free <= kReservedEvents)) {
    events_dropped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  write(event);
  return true;
}

bool SessionOutput::emit_with_payload(Event event, std::span<const std::byte> a, std::span<const std::byte> b,
                                      bool truncated) {
  const std::uint32_t payload_id = next_payload_id_++;
  if (payloads_ && payloads_->write(payload_id, a, b)) {
    event.payload = truncated ? PayloadStatus::kTruncated : PayloadStatus::kAttached;
    event.payload_bytes = static_cast<std::uint32_t>(a.size() + b.size());
    event.payload_id = payload_id;
  } else {
    event.payload = PayloadStatus::kDropped;
    payloads_dropped_.fetch_add(1, std::memory_order_relaxed);
  }
  return emit(event);
}

void SessionOutput::write(const Event& event) {
  events_.write(std::span(&event, 1));
  wake().published();
  unannounced_ = true;
}

bool SessionOutput::write_payload(Event& event, std::span<const std::byte> bytes) {
  if (!payloads_ || !payloads_->write(next_payload_id_, bytes)) return false;
  event.payload = PayloadStatus::kAttached;
  event.payload_bytes = static_cast<std::uint32_t>(bytes.size());
  event.payload_id = next_payload_id_++;
  return true;
}

void SessionOutput::set_error(std::string message) {
  std::lock_guard lock(error_mutex_);
  last_error_ = std::move(message);
}

std::string SessionOutput::last_error() const {
  std::lock_guard lock(error_mutex_);
  return last_error_;
}

std::size_t SessionOutput::read_payload(const Event& event, std::span<std::byte> out) noexcept {
  if (!payloads_) return 0;
  if (event.payload != PayloadStatus::kAttached && event.payload != PayloadStatus::kTruncated) return 0;
  std::uint64_t skipped = 0;
  const std::size_t n = payloads_->read(event.payload_id, out, skipped);
  if (skipped) payloads_unread_.fetch_add(skipped, std::memory_order_relaxed);
  return n;
}

void SessionOutput::discard_payload(const Event& event) noexcept {
  if (!payloads_) return;
  if (event.payload != PayloadStatus::kAttached && event.payload != PayloadStatus::kTruncated) return;
  std::uint64_t skipped = 0;
  payloads_->discard(event.payload_id, skipped);
  if (skipped) payloads_unread_.fetch_add(skipped, std::memory_order_relaxed);
}

std::vector<std::byte> SessionOutput::read_bytes(const Event& event) {
  if (!payloads_) return {};
  if (event.payload != PayloadStatus::kAttached && event.payload != PayloadStatus::kTruncated) return {};
  std::uint64_t skipped = 0;
  const std::size_t size = payloads_->size_of(event.payload_id, skipped);
  if (skipped) payloads_unread_.fetch_add(skipped, std::memory_order_relaxed);
  std::vector<std::byte> bytes(size);
  if (size == 0 || read_payload(event, bytes) != size) return {};
  return bytes;
}

std::vector<float> SessionOutput::read_audio(const Event& event) {
  if (!payloads_) return {};
  if (event.payload != PayloadStatus::kAttached && event.payload != PayloadStatus::kTruncated) return {};
  std::uint64_t skipped = 0;
  const std::size_t bytes = payloads_->size_of(event.payload_id, skipped);
  if (skipped) payloads_unread_.fetch_add(skipped, std::memory_order_relaxed);
  std::vector<float> samples(bytes / sizeof(float));
  if (bytes == 0 || read_payload(event, std::as_writable_bytes(std::span(samples))) != bytes) return {};
  return samples;
}

}  // namespace brisvox::engine
