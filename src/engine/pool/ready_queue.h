// A fixed-capacity FIFO of job pointers: no allocation after construction. Used under its
// worker's mutex.
#pragma once

#include <cstddef>
#include <vector>

namespace brisvox::engine {

template <typename Job>
class ReadyQueue {
 public:
  explicit ReadyQueue(std::size_t capacity) : items_(capacity) {}
  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }
  // False when full (the pool sizes queues so that this cannot happen: a job is queued at most once).
  bool push(Job* job) noexcept {
    if (size_ == items_.size()) return false;
    items_[(head_ + size_) % items_.size()] = job;
    ++size_;
    return true;
  }
  Job* front() const noexcept { return items_[head_]; }
  // The i-th oldest (i < size()).
  Job* at(std::size_t i) const noexcept { return items_[(head_ + i) % items_.size()]; }
  // Removes the i-th oldest, keeping the others in order (a worker taking a job from another's
  // queue: rare, and queues are short).
  void erase(std::size_t i) noexcept {
    for (; i + 1 < size_; ++i) items_[(head_ + i) % items_.size()] = items_[(head_ + i + 1) % items_.size()];
    --size_;
  }
  Job* pop() noexcept {
    Job* job = items_[head_];
    head_ = (head_ + 1) % items_.size();
    --size_;
    return job;
  }

 private:
  std::vector<Job*> items_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace brisvox::engine
