// The open streams of an engine (for drain, stats and the capacity check): shared owners of their
// slots, added by open_stream and removed by the stream's VAD worker when it retires the stream.
// O(1) add and remove under one mutex; no allocation after construction (capacity max_streams).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/stream/stream_slot.h"

namespace brisvox::engine {

class StreamRegistry {
 public:
  explicit StreamRegistry(std::size_t max_streams) { streams_.reserve(max_streams); }

  void add(std::shared_ptr<StreamSlot> slot) {
    std::lock_guard lock(mu_);
    slot->registry_index = streams_.size();
    streams_.push_back(std::move(slot));
  }
  // The registry's reference to `slot` (null if it was not registered).
  std::shared_ptr<StreamSlot> remove(StreamSlot& slot) {
    std::lock_guard lock(mu_);
    const std::size_t i = slot.registry_index;
    if (i >= streams_.size() || streams_[i].get() != &slot) return nullptr;
    std::shared_ptr<StreamSlot> out = std::move(streams_[i]);
    if (i + 1 < streams_.size()) {
      streams_[i] = std::move(streams_.back());
      streams_[i]->registry_index = i;
    }
    streams_.pop_back();
    return out;
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return streams_.size();
  }
  std::vector<std::shared_ptr<StreamSlot>> snapshot() const {
    std::lock_guard lock(mu_);
    return streams_;
  }
  // Calls f(const StreamSlot&) for every open stream, under the registry's lock.
  template <typename F>
  void for_each(F&& f) const {
    std::lock_guard lock(mu_);
    for (const auto& s : streams_) f(*s);
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<StreamSlot>> streams_;
};

}  // namespace brisvox::engine
