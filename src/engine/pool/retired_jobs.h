// Jobs a worker has retired (a closed stream, a closed speech session) whose memory may still be
// referenced: a pointer in a ready queue (the job is `queued`), or another owner (a request in
// flight, a handle). The worker keeps them here and frees each once neither holds, after a later
// batch. Worker thread only; no allocation once its capacity covers the jobs retired at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

namespace brisvox::engine {

template <typename Job>
class RetiredJobs {
 public:
  explicit RetiredJobs(std::size_t capacity) { jobs_.reserve(capacity); }

  void add(std::shared_ptr<Job> job) { jobs_.push_back(std::move(job)); }

  // Frees the jobs no ready queue and no other owner refers to any more.
  void free_unreferenced() {
    for (std::size_t i = 0; i < jobs_.size();) {
      if (!jobs_[i]->queued.load(std::memory_order_acquire) && jobs_[i].use_count() == 1) {
        jobs_[i] = std::move(jobs_.back());
        jobs_.pop_back();
      } else {
        ++i;
      }
    }
  }

 private:
  std::vector<std::shared_ptr<Job>> jobs_;
};

}  // namespace brisvox::engine
