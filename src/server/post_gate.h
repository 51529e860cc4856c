// Lets engine worker threads wake network strands safely while the server shuts down.
//
// A stream's on_events callback runs on a worker thread and must only post a notification to its
// session's strand. The io_context those strands belong to is destroyed at shutdown while engine
// streams may still exist; once close() has returned, no post reaches it. Posting takes a shared
// lock (workers never wait for each other); close() takes it exclusively, once.
#pragma once

#include <boost/asio/post.hpp>
#include <shared_mutex>
#include <utility>

namespace brisvox::server {

class PostGate {
 public:
  // Posts `handler` to `executor` unless the gate is closed. Returns whether it was posted.
  template <typename Executor, typename Handler>
  bool post(const Executor& executor, Handler&& handler) {
    std::shared_lock lock(mu_);
    if (!open_) return false;
    boost::asio::post(executor, std::forward<Handler>(handler));
    return true;
  }

  void close() {
    std::unique_lock lock(mu_);
    open_ = false;
  }

 private:
  std::shared_mutex mu_;
  bool open_ = true;
};

}  // namespace brisvox::server
