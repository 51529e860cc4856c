// How an asyncio event loop learns which streams have events, without a thread per waiting stream
// (brisvox/_aio.py).
//
// Every Python stream carries a NotifyHook, called by its engine worker after it wrote events
// (StreamConfig::on_events). Once a loop attached the stream to its LoopNotifier, the hook queues
// the stream's token there, and the notifier's eventfd becomes readable; the loop watches the fd
// (loop.add_reader) and takes the tokens of the streams to read. The fd is written only when the
// queue was empty, so one wake-up of the loop serves every stream whose events came in the meantime:
// with 100 Pipecat calls, about one per VAD batch instead of a thread hand-off per window.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace brisvox::python {

class LoopNotifier;

// One per Python stream, shared with the worker's on_events. Unattached, fire() costs a lock and
// a null check per processed frame.
class NotifyHook : public std::enable_shared_from_this<NotifyHook> {
 public:
  // Worker thread: the stream has new events.
  void fire() noexcept;
  // Loop thread: from now on fire() queues `token` on `notifier` (replacing an earlier notifier).
  void attach(std::shared_ptr<LoopNotifier> notifier, std::uint64_t token);
  bool attached_to(const LoopNotifier* notifier) const;
  std::uint64_t token() const;

 private:
  friend class LoopNotifier;
  mutable std::mutex mu_;
  std::shared_ptr<LoopNotifier> notifier_;
  std::uint64_t token_ = 0;
  // In the notifier's queue: later fire()s add nothing until take() hands the token out.
  std::atomic<bool> queued_{false};
};

// enable_shared_from_this: nanobind then hands the hooks shared_ptrs that own the C++ object
// only. Without it, each such shared_ptr would hold a reference to the Python object, released
// by whatever engine thread drops the hook last, without the GIL.
class LoopNotifier : public std::enable_shared_from_this<LoopNotifier> {
 public:
  LoopNotifier();  // brisvox::Error (kInternal) when the eventfd cannot be made
  ~LoopNotifier();
  LoopNotifier(const LoopNotifier&) = delete;
  LoopNotifier& operator=(const LoopNotifier&) = delete;

  int fd() const noexcept { return fd_; }
  // The tokens of the streams that had events since the last call (each once), and the fd read
  // empty. Never blocks on the engine: the workers hold the mutex only to append.
  std::vector<std::uint64_t> take();

 private:
  friend class NotifyHook;
  void queue(std::shared_ptr<NotifyHook> hook, std::uint64_t token) noexcept;

  int fd_ = -1;
  std::mutex mu_;
  std::vector<std::pair<std::shared_ptr<NotifyHook>, std::uint64_t>> queued_;
  bool signalled_ = false;  // the fd was written since the last take()
};

}  // namespace brisvox::python
