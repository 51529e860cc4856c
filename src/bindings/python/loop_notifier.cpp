#include "loop_notifier.h"

#include <fmt/format.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "brisvox/error.h"

namespace brisvox::python {

void NotifyHook::fire() noexcept {
  std::lock_guard lock(mu_);
  if (!notifier_) return;
  // Release: the events written before this call are visible to whoever takes the token
  // (LoopNotifier::take's exchange reads this value).
  if (queued_.exchange(true, std::memory_order_acq_rel)) return;
  notifier_->queue(shared_from_this(), token_);
}

void NotifyHook::attach(std::shared_ptr<LoopNotifier> notifier, std::uint64_t token) {
  std::lock_guard lock(mu_);
  notifier_ = std::move(notifier);
  token_ = token;
  queued_.store(false, std::memory_order_release);
}

bool NotifyHook::attached_to(const LoopNotifier* notifier) const {
  std::lock_guard lock(mu_);
  return notifier_.get() == notifier;
}

std::uint64_t NotifyHook::token() const {
  std::lock_guard lock(mu_);
  return token_;
}

LoopNotifier::LoopNotifier() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) {
    throw Error(ErrorCode::kInternal, fmt::format("brisvox: eventfd() failed for an event loop's notifier: {}",
                                                  std::strerror(errno)));
  }
  queued_.reserve(64);
}

LoopNotifier::~LoopNotifier() { ::close(fd_); }

void LoopNotifier::queue(std::shared_ptr<NotifyHook> hook, std::uint64_t token) noexcept {
  bool signal = false;
  {
    std::lock_guard lock(mu_);
    try {
      queued_.emplace_back(std::move(hook), token);
    } catch (...) {
      // Out of memory: the token is lost, not the wake-up; the loop's waits are bounded and poll.
    }
    signal = !signalled_;
    signalled_ = true;
  }
  if (signal) {
    const std::uint64_t one = 1;
    // EAGAIN (the counter at its maximum) leaves the fd readable, which is all that is needed.
    [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
  }
}

std::vector<std::uint64_t> LoopNotifier::take() {
  // The fd first: a hook queued after the swap below writes it again (signalled_ is false then).
  std::uint64_t count = 0;
  [[maybe_unused]] const ssize_t n = ::read(fd_, &count, sizeof count);
  std::vector<std::pair<std::shared_ptr<NotifyHook>, std::uint64_t>> taken;
  taken.reserve(64);
  {
    std::lock_guard lock(mu_);
    taken.swap(queued_);
    signalled_ = false;
  }
  std::vector<std::uint64_t> tokens;
  tokens.reserve(taken.size());
  for (auto& [hook, token] : taken) {
    // Acquire: pairs with fire()'s exchange, so the stream's events are visible to the reader
    // that this token sends to it. A fire() after this queues the token again.
    hook->queued_.exchange(false, std::memory_order_acq_rel);
    tokens.push_back(token);
  }
  return tokens;
}

}  // namespace brisvox::python
