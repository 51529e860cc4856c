// The output side of every session kind (a stream, a speech session): the events its worker
// writes and its reader polls (a fixed ring), the variable-size payloads beside them (a bounded
// channel, when the session produces any), the message of its last error, and the reader's two
// wake-ups (a reader blocked in wait(), and the owner's on_events callback: a server strand, a
// Python event loop). Allocated once, when the session opens; nothing here allocates per event.
//
// One producer (the session's worker, whichever it is at the moment: a pool hands a job from one
// worker to another under its mutex) and one consumer (the session's reader). Two writing
// policies, one per kind of work:
//   - emit(), emit_with_payload(): a stream's worker cannot wait (its VAD clock goes on), so what
//     does not fit is dropped and counted, never silently: probability events first (while fewer
//     than kReservedEvents slots are free), then anything; a payload that does not fit is marked
//     kDropped on its event.
//   - event_room(), write(), write_payload(): a speech session's worker waits for room instead
//     (its synthesis pauses: the back-pressure), so it writes only what fits.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "brisvox/engine/events.h"
#include "engine/output/payload_channel.h"
#include "engine/sync/reader_wake.h"
#include "engine/sync/spsc_ring.h"

namespace brisvox::engine {

class SessionOutput {
 public:
  // Free slots a stream keeps for speech events: probability events are dropped before these.
  static constexpr std::size_t kReservedEvents = 8;

  // `event_capacity`: events the ring holds (a power of two). `payload_bytes`: the payload
  // channel's room, 0 for none. `on_events` may be empty. `shared_wake`: a wake-up this output
  // shares with another (a call's two sides, whose owner waits for both); null: its own.
  SessionOutput(std::size_t event_capacity, std::size_t payload_bytes, std::function<void()> on_events,
                std::shared_ptr<ReaderWake> shared_wake = nullptr);

  // --- the worker's side ---------------------------------------------------------------------

  // Queues `event`; false (counted in events_dropped) when the ring is full, or, for a
  // kVadProbability event, when no more than kReservedEvents slots are free.
  bool emit(const Event& event);
  // `event` with the payload [a, b] (written first, so that the event's reader finds it):
  // kAttached (or `truncated`: kTruncated) when it fits the channel, else kDropped and counted.
  bool emit_with_payload(Event event, std::span<const std::byte> a, std::span<const std::byte> b, bool truncated);

  // For a worker that waits for room: the free event slots now, a write of one event that fits
  // (event_room() > 0), and a payload written only when it fits (false: nothing was written; on
  // success `event` says where the payload is).
  std::size_t event_room() const noexcept { return events_.free_space(); }
  void write(const Event& event);
  bool write_payload(Event& event, std::span<const std::byte> bytes);

  void set_error(std::string message);
  // Calls on_events (the reader's own wake-up). announce() only when events were written since the
  // last call; notify() whatever was written (a stream's reader that waits for buffer space learns
  // of every frame).
  void announce() {
    if (unannounced_) notify();
  }
  void notify() {
    unannounced_ = false;
    if (on_events_) on_events_();
  }

  // --- the reader's side ---------------------------------------------------------------------

  // Moves up to out.size() pending events into `out`; returns how many. Never blocks.
  std::size_t poll(std::span<Event> out) noexcept { return events_.read(out); }
  bool has_events() const noexcept { return events_.size() > 0; }
  // The payload of `event` (kAttached or kTruncated), copied into `out`, which must hold
  // event.payload_bytes; returns the bytes copied, 0 when it is gone (read, or skipped) or `out` is
  // too small. Older payloads the reader skipped are discarded and counted (payloads_unread).
  std::size_t read_payload(const Event& event, std::span<std::byte> out) noexcept;
  // The same as float samples (allocates the vector); empty when the payload is gone.
  std::vector<float> read_audio(const Event& event);
  // Removes the payload of `event` unread (a reader that drops the event frees its room now, not
  // when a later read skips it). Not counted as unread: the reader chose to drop it.
  void discard_payload(const Event& event) noexcept;
  // The same as bytes (allocates the vector); empty when the payload is gone.
  std::vector<std::byte> read_bytes(const Event& event);
  // Sleeps until an event is pending (the worker wakes it) or the timeout. True if one is.
  bool wait(std::chrono::microseconds timeout) { return wait_for_events(events_, wake(), timeout); }
  std::string last_error() const;

  // --- counters (any thread) ---------------------------------------------------------------------
  std::uint64_t events_dropped() const noexcept { return events_dropped_.load(std::memory_order_relaxed); }
  std::uint64_t payloads_dropped() const noexcept { return payloads_dropped_.load(std::memory_order_relaxed); }
  // Payloads the reader skipped (read a later one first).
  std::uint64_t payloads_unread() const noexcept { return payloads_unread_.load(std::memory_order_relaxed); }
  // Payloads written and not yet read or skipped (exact once one side has stopped).
  std::uint64_t payloads_waiting() const noexcept { return payloads_ ? payloads_->waiting() : 0; }

 private:
  ReaderWake& wake() noexcept { return shared_wake_ ? *shared_wake_ : wake_; }

  SpscRing<Event> events_;
  ReaderWake wake_;
  std::shared_ptr<ReaderWake> shared_wake_;  // set: used instead of wake_
  std::unique_ptr<PayloadChannel> payloads_;  // null: the session produces no payloads
  std::function<void()> on_events_;
  bool unannounced_ = false;          // worker: written since on_events was last called
  std::uint32_t next_payload_id_ = 1;  // worker
  std::atomic<std::uint64_t> events_dropped_{0};
  std::atomic<std::uint64_t> payloads_dropped_{0};
  std::atomic<std::uint64_t> payloads_unread_{0};  // reader
  mutable std::mutex error_mutex_;
  std::string last_error_;
};

}  // namespace brisvox::engine
