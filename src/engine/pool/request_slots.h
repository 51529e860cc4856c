// The fixed set of request records a request model keeps (ModelSpec::max_pending): a submitter
// takes a free one, fills it and schedules it; the pool worker gives it back once its result is
// delivered. Bounded, preallocated, one mutex around the free list (taken once per request, never
// per frame).
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace brisvox::engine {

template <typename Request>
class RequestSlots {
 public:
  // Every slot is default-constructed in place, then passed to init (to size its buffers).
  template <typename Init>
  RequestSlots(std::size_t count, Init&& init) : slots_(count) {
    free_.reserve(count);
    for (std::size_t i = count; i-- > 0;) {
      init(slots_[i]);
      free_.push_back(&slots_[i]);
    }
  }
  // A free slot, or null when all are in use (or after close()), or when no more than `keep_free`
  // are free: those are kept for requests that must not wait behind this kind.
  Request* acquire(std::size_t keep_free = 0) {
    std::lock_guard lock(mu_);
    if (free_.size() <= keep_free || closed_) return nullptr;
    Request* r = free_.back();
    free_.pop_back();
    return r;
  }
  void release(Request* r) {
    std::lock_guard lock(mu_);
    free_.push_back(r);
  }
  // From now on acquire() fails (the pool is stopping).
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  std::size_t capacity() const noexcept { return slots_.size(); }

 private:
  std::vector<Request> slots_;
  std::mutex mu_;
  std::vector<Request*> free_;  // (mu_)
  bool closed_ = false;         // (mu_)
};

}  // namespace brisvox::engine
