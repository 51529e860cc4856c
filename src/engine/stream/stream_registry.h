// The open streams of an engine (for drain, stats and the capacity check): shared owners of their
// states, added by open_stream and removed by the stream's VAD worker when it retires the stream.
// O(1) add and remove under one mutex; no allocation after construction (capacity max_streams).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/stream/stream_state.h"

namespace brisvox::engine {

class StreamRegistry {
 public:
  explicit StreamRegistry(std::size_t max_streams) { streams_.reserve(max_streams); }

  void add(std::shared_ptr<StreamState> stream) {
    std::lock_guard lock(mu_);
    stream->registry_index = streams_.size();
    streams_.push_back(std::move(stream));
  }
  bool contains(const StreamState& stream) const {
    std::lock_guard lock(mu_);
    const std::size_t i = stream.registry_index;
    return i < streams_.size() && streams_[i].get() == &stream;
  }
  // Removes `stream` and calls fold() under the same lock, so that a reader of visit() sees the
  // stream either still open or with fold()'s totals written (a closed stream's figures moved
  // into the engine's), never neither. Returns the registry's reference (null if it was not
  // registered; fold() is then not called).
  template <typename Fold>
  std::shared_ptr<StreamState> remove(StreamState& stream, Fold&& fold) {
    std::lock_guard lock(mu_);
    const std::size_t i = stream.registry_index;
    if (i >= streams_.size() || streams_[i].get() != &stream) return nullptr;
    fold();
    std::shared_ptr<StreamState> out = std::move(streams_[i]);
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
  std::vector<std::shared_ptr<StreamState>> snapshot() const {
    std::lock_guard lock(mu_);
    return streams_;
  }
  // Calls before() and then f(const StreamState&) for every open stream, all under the registry's
  // lock: what before() reads of the totals that remove()'s fold writes agrees with the streams
  // it then visits.
  template <typename Before, typename F>
  void visit(Before&& before, F&& f) const {
    std::lock_guard lock(mu_);
    before();
    for (const auto& s : streams_) f(*s);
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<StreamState>> streams_;
};

}  // namespace brisvox::engine
