#include "server/connection_limits.h"

#include <utility>

namespace brisvox::server {

ConnectionLimiter::Slot::Slot(Slot&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), client_(std::move(other.client_)), refused_(other.refused_) {}

ConnectionLimiter::Slot& ConnectionLimiter::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    client_ = std::move(other.client_);
    refused_ = other.refused_;
  }
  return *this;
}

void ConnectionLimiter::Slot::release() {
  if (auto* owner = std::exchange(owner_, nullptr)) owner->release(client_);
}

ConnectionLimiter::Slot ConnectionLimiter::acquire(const std::string& client) {
  Slot slot;
  std::lock_guard lock(mu_);
  if (total_ >= max_total_) {
    slot.refused_ = Refusal::kTotal;
    return slot;
  }
  int& mine = per_client_[client];
  if (mine >= max_per_client_) {
    if (mine == 0) per_client_.erase(client);
    slot.refused_ = Refusal::kPerClient;
    return slot;
  }
  ++mine;
  ++total_;
  slot.owner_ = this;
  slot.client_ = client;
  return slot;
}

void ConnectionLimiter::release(const std::string& client) {
  std::lock_guard lock(mu_);
  --total_;
  auto it = per_client_.find(client);
  if (it != per_client_.end() && --it->second <= 0) per_client_.erase(it);
}

int ConnectionLimiter::open() const {
  std::lock_guard lock(mu_);
  return total_;
}

int ConnectionLimiter::open_from(const std::string& client) const {
  std::lock_guard lock(mu_);
  const auto it = per_client_.find(client);
  return it == per_client_.end() ? 0 : it->second;
}

std::shared_ptr<void> UploadLimiter::try_acquire() {
  int n = in_progress_.load();
  do {
    if (n >= max_) return nullptr;
  } while (!in_progress_.compare_exchange_weak(n, n + 1));
  // The token's deleter gives the unit back; the limiter outlives every token (ServerContext).
  return std::shared_ptr<void>(this, [](UploadLimiter* self) { self->in_progress_.fetch_sub(1); });
}

}  // namespace brisvox::server
