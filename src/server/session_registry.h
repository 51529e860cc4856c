// The open WebSocket sessions, so that a shutdown can reach each of them on its own strand.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace brisvox::server {

// What a shutdown asks of a session. Both post to the session's strand and return at once.
class Drainable {
 public:
  virtual ~Drainable() = default;
  // Stop taking audio, deliver the final events, close with 1001 "going away".
  virtual void go_away() = 0;
  // The drain deadline passed: drop the connection now.
  virtual void abort() = 0;
};

class SessionRegistry {
 public:
  void add(std::uint64_t id, std::weak_ptr<Drainable> session) {
    std::lock_guard lock(mu_);
    sessions_[id] = std::move(session);
  }
  void remove(std::uint64_t id) {
    std::lock_guard lock(mu_);
    sessions_.erase(id);
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return sessions_.size();
  }
  std::vector<std::shared_ptr<Drainable>> snapshot() const {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<Drainable>> out;
    for (const auto& [id, weak] : sessions_) {
      if (auto s = weak.lock()) out.push_back(std::move(s));
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::uint64_t, std::weak_ptr<Drainable>> sessions_;
};

}  // namespace brisvox::server
