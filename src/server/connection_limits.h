// Caps on what clients hold open: HTTP connections in total and per client address, and POST
// uploads in progress. Thread-safe counters with RAII slots, so that every way a connection or an
// upload ends gives its slot back.
//
//   ConnectionLimiter limiter(1024, 256);
//   auto slot = limiter.acquire("10.0.0.7");   // refusal: slot.refused() says which cap
//   ...                                         // released when `slot` goes
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace brisvox::server {

class ConnectionLimiter {
 public:
  enum class Refusal { kNone, kTotal, kPerClient };

  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { release(); }
    Refusal refused() const noexcept { return refused_; }
    bool held() const noexcept { return owner_ != nullptr; }
    void release();

   private:
    friend class ConnectionLimiter;
    ConnectionLimiter* owner_ = nullptr;
    std::string client_;
    Refusal refused_ = Refusal::kNone;
  };

  ConnectionLimiter(int max_total, int max_per_client) : max_total_(max_total), max_per_client_(max_per_client) {}

  // A held slot, or a refused one (refused() != kNone) holding nothing.
  Slot acquire(const std::string& client);
  int open() const;
  int open_from(const std::string& client) const;
  int max_total() const noexcept { return max_total_; }
  int max_per_client() const noexcept { return max_per_client_; }

 private:
  void release(const std::string& client);

  const int max_total_;
  const int max_per_client_;
  mutable std::mutex mu_;
  int total_ = 0;
  std::unordered_map<std::string, int> per_client_;  // only addresses with connections open
};

// At most `max` holders at once; try_acquire() never waits.
class UploadLimiter {
 public:
  explicit UploadLimiter(int max) : max_(max) {}
  // A token held until it is destroyed, or nullptr when `max` are held.
  std::shared_ptr<void> try_acquire();
  int in_progress() const noexcept { return in_progress_.load(); }
  int max() const noexcept { return max_; }

 private:
  const int max_;
  std::atomic<int> in_progress_{0};
};

}  // namespace brisvox::server
