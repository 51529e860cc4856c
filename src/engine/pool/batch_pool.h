// The one batching pool of the engine, for every model family: N worker threads, each with its
// own model adapter (its own ONNX Runtime session and preallocated tensors), its own ready queues
// and the jobs pinned to it.
//
// A worker waits for ready jobs, takes the key whose oldest ready job has waited longest, waits a
// bounded time for a fuller batch (max_gather_wait_us, and never for more jobs than could become
// ready: those pinned to it), pops up to max_batch jobs of that key and then, outside its lock:
//   1. adapter.prepare(job, row) for each: stages the job's input in batch row `row` and returns
//      when that input became ready, or kNotStaged when the job has nothing to run (a closed
//      stream, one that waits for audio: the adapter deals with those itself);
//   2. adapter.run(key, rows) once, under the watchdog's deadline (run_watchdog.h): a run past
//      run_timeout_ms is cancelled through ONNX Runtime's terminate flag and fails like any other;
//   3. adapter.complete(job, completion) for each staged job, with the failure when the run
//      failed; it returns true when the job has more work ready, and the pool queues it again;
//   4. adapter.after_batch().
// Queue delay (ready -> run start), run time, latency (ready -> complete() done), batch sizes,
// errors and timeouts are recorded here, for every model alike, and the log line of a failed run
// is written here.
//
// Frame-synchronous models (Silero) pin a stream to a worker for its life and queue it whenever a
// frame completes; request models (Smart Turn) pin each request to the least loaded worker when it
// is submitted. Sequences that take several steps (a decoder) stay pinned and return true from
// complete() until they are done; others join between steps.
//
// Jobs that carry all their state themselves (a Piper speech session: its synthesis lives in the
// job, not in the worker's session) may move between steps, when the adapter says so (MovesJobs
// below): a worker that runs out of work takes the waiting job due first from a busy worker's
// queue, so that one worker does not idle while another has a queue (a pinned session keeps its
// worker busy to the end of its reply while the other worker's sessions have finished). A job
// moves only while it waits in a queue and is not in its worker's run (a job can be queued again
// while it runs), and only the worker out of work moves it, holding the busy worker's mutex: the
// job's worker-side fields have one owner at a time, handed over through that mutex.
//
// No allocation on the warm path: queues, batch arrays and counters are sized at construction.
#pragma once

#include <algorithm>
#include <concepts>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/log.h"
#include "brisvox/engine/engine_config.h"
#include "brisvox/engine/engine_stats.h"
#include "brisvox/error.h"
#include "engine/pool/pool_clock.h"
#include "engine/pool/pool_counters.h"
#include "engine/pool/pool_job.h"
#include "engine/pool/ready_queue.h"
#include "engine/pool/run_watchdog.h"

namespace brisvox::engine {

// prepare(): the job has nothing to run in this batch.
inline constexpr std::int64_t kNotStaged = std::numeric_limits<std::int64_t>::min();

// Why a run failed, for the items it carried.
struct RunFailure {
  ErrorCode code = ErrorCode::kRuntime;  // kInferenceTimeout when the watchdog cancelled it
  bool timed_out = false;
  std::string_view why;  // adapter.describe_failure(): what happened and what to do
};

// What complete() learns about its job's part in the run.
struct Completion {
  std::size_t row = 0;
  std::int64_t ready_ns = 0;      // what prepare() returned
  std::int64_t run_start_ns = 0;  // when the run began (queue delay = run_start_ns - ready_ns)
  const RunFailure* failure = nullptr;  // null: the run succeeded
};

template <typename A>
concept PoolAdapter =
    std::derived_from<typename A::Job, PoolJob> &&
    requires(A& a, const A& ca, typename A::Job& job, const Completion& c, const Error& e) {
      { a.prepare(job, std::size_t{}) } -> std::same_as<std::int64_t>;
      { a.run(int{}, std::size_t{}) };
      { a.complete(job, c) } -> std::same_as<bool>;
      { a.after_batch() };
      { a.cancel_run() } noexcept;
      { a.clear_cancel() } noexcept;
      { a.describe_failure(e, bool{}, std::size_t{}, std::int64_t{}) } -> std::convertible_to<std::string>;
      { ca.load() } noexcept -> std::same_as<std::size_t>;
    };

// An adapter whose jobs may move to another worker between steps (their state is in the job):
// may_move(job) is asked by the job's worker's mutex holder, about a job that is not running
// (Piper: not a session retired into that worker's list); detach()/attach() move the job's share
// of load() from one worker's adapter to the other's.
template <typename A>
concept MovesJobs = PoolAdapter<A> && requires(A& a, const typename A::Job& job) {
  { a.may_move(job) } -> std::same_as<bool>;
  { a.attach() } noexcept;
  { a.detach() } noexcept;
};

// What every pool offers the engine, whatever its adapter (not on the per-frame path).
class ModelPool {
 public:
  explicit ModelPool(ModelSpec spec) : spec_(std::move(spec)) {}
  virtual ~ModelPool() = default;
  ModelPool(const ModelPool&) = delete;
  ModelPool& operator=(const ModelPool&) = delete;

  const ModelSpec& spec() const noexcept { return spec_; }
  virtual void start() = 0;
  // Lets the workers finish what is queued, then joins them. Idempotent.
  virtual void stop() = 0;
  // Before start(): every worker's run under the watchdog, with the model's run_timeout_ms.
  virtual void watch_runs(RunWatchdog& watchdog) = 0;
  virtual ModelStats stats() const = 0;
  // The highest queue delay p99 of the last second over the workers (stale windows ignored).
  virtual double recent_p99_queue_delay_us(std::int64_t now_ns) const = 0;
  virtual int num_workers() const noexcept = 0;

 private:
  ModelSpec spec_;
};

struct PoolShape {
  int num_keys = 1;                     // distinct job keys (Silero: 2 rates)
  std::size_t max_jobs_per_worker = 1;  // jobs pinned to one worker at most (queue capacity)
};

template <PoolAdapter A>
class BatchPool : public ModelPool {
 public:
  using Job = typename A::Job;
  static constexpr bool kMoves = MovesJobs<A>;

  // `spec` resolved (ModelSpec::resolved). make_adapter(i) builds worker i's adapter (its
  // session), returned by value: adapters need not be movable.
  template <typename MakeAdapter>
  BatchPool(ModelSpec spec, PoolShape shape, MakeAdapter&& make_adapter) : ModelPool(std::move(spec)) {
    const auto b = static_cast<std::size_t>(this->spec().max_batch);
    for (int i = 0; i < this->spec().num_workers; ++i) {
      workers_.push_back(std::make_unique<Worker>(i, make_adapter, shape, b));
    }
  }
  ~BatchPool() override { stop(); }

  void start() override {
    for (auto& w : workers_) {
      Worker* wp = w.get();
      w->thread = std::thread([this, wp] { run(*wp); });
    }
  }

  void stop() override {
    for (auto& w : workers_) {
      {
        std::lock_guard lock(w->mu);
        w->stop = true;
      }
      w->cv.notify_all();
    }
    for (auto& w : workers_) {
      if (w->thread.joinable()) w->thread.join();
    }
  }

  void watch_runs(RunWatchdog& watchdog) override {
    if (spec().run_timeout_ms <= 0) return;  // this model has no deadline
    for (auto& w : workers_) {
      Worker* wp = w.get();
      watchdog.watch(wp->deadline, [wp] { wp->adapter.cancel_run(); }, spec().run_timeout_ms);
    }
  }

  int num_workers() const noexcept override { return static_cast<int>(workers_.size()); }
  A& adapter(int worker) noexcept { return workers_[static_cast<std::size_t>(worker)]->adapter; }
  const A& adapter(int worker) const noexcept { return workers_[static_cast<std::size_t>(worker)]->adapter; }

  // The worker with the fewest jobs pinned to it (ties: the lowest index).
  int least_loaded_worker() const noexcept {
    int best = 0;
    std::size_t best_load = std::numeric_limits<std::size_t>::max();
    for (std::size_t i = 0; i < workers_.size(); ++i) {
      const std::size_t load = workers_[i]->adapter.load();
      if (load < best_load) {
        best = static_cast<int>(i);
        best_load = load;
      }
    }
    return best;
  }

  // Any thread: the job (pinned: job->worker set) has work. Cheap when it is already queued.
  void schedule(Job* job) {
    if (job->queued.exchange(true, std::memory_order_acq_rel)) return;
    Worker& w = *workers_[static_cast<std::size_t>(job->worker.load(std::memory_order_relaxed))];
    bool surplus = false;
    {
      std::lock_guard lock(w.mu);
      job->ready_since_ns = now_ns();
      ReadyQueue<Job>& q = w.ready[static_cast<std::size_t>(job->key.load(std::memory_order_relaxed))];
      q.push(job);  // cannot fail: a job is queued at most once and capacity > jobs pinned
      ++w.num_ready;
      if (w.idle || (w.gathering && q.size() >= static_cast<std::size_t>(spec().max_batch))) w.cv.notify_one();
      surplus = kMoves && has_surplus(w, w.idle);
    }
    if (surplus) wake_one_out_of_work(w);
  }

  ModelStats stats() const override {
    ModelStats st;
    st.name = spec().name;
    st.family = spec().family;
    st.num_workers = num_workers();
    st.max_batch = spec().max_batch;
    st.batch_size_counts.assign(static_cast<std::size_t>(spec().max_batch) + 1, 0);
    for (const auto& w : workers_) w->counters.add_to(st);
    return st;
  }

  double recent_p99_queue_delay_us(std::int64_t now) const override {
    double worst = 0.0;
    for (const auto& w : workers_) {
      const bool fresh = now - w->counters.window_end_ns.load(std::memory_order_relaxed) < 2'000'000'000;
      if (fresh) worst = std::max(worst, w->counters.recent_p99_queue_delay_us.load(std::memory_order_relaxed));
    }
    return worst;
  }

 private:
  struct Worker {
    template <typename MakeAdapter>
    Worker(int i, MakeAdapter& make_adapter, const PoolShape& shape, std::size_t max_batch)
        : index(i), adapter(make_adapter(i)), counters(static_cast<int>(max_batch)) {
      // A queue may hold every job of the pool when jobs move (a job is queued at most once).
      for (int k = 0; k < shape.num_keys; ++k) ready.emplace_back(shape.max_jobs_per_worker + 1);
      batch.resize(max_batch);
      in_run.resize(max_batch);
      ready_ns.resize(max_batch);
      requeue.reserve(2 * max_batch);
    }
    const int index;
    A adapter;
    PoolCounters counters;
    RunDeadline deadline;
    DelayWindow window;  // worker thread only

    std::mutex mu;
    std::condition_variable cv;
    std::vector<ReadyQueue<Job>> ready;  // by key (mu)
    std::size_t num_ready = 0;           // over every key (mu)
    bool idle = false;                   // waiting for any work (mu)
    bool gathering = false;              // waiting to fill a batch (mu)
    bool stop = false;                   // (mu)
    // MovesJobs pools only. The jobs of the run in progress (mu), which no other worker may take
    // although they may be queued again meanwhile (a copy: process() compacts `batch` without the
    // mutex, so another worker cannot read that); `out_of_work`: this worker has nothing ready
    // and looks at, or waits for, the other workers' queues (set before it looks, so that a job
    // queued after its look finds it set); `poked`: such a job was queued meanwhile (mu).
    std::vector<Job*> in_run;
    std::size_t num_in_run = 0;
    std::atomic<bool> out_of_work{false};
    bool poked = false;

    // The batch being run (worker thread only), preallocated for max_batch.
    std::vector<Job*> batch;
    std::vector<std::int64_t> ready_ns;
    std::vector<Job*> requeue;
    std::thread thread;
  };

  void run(Worker& w) {
    std::unique_lock lock(w.mu);
    while (true) {
      while (!w.stop && w.num_ready == 0) {
        if constexpr (kMoves) {
          if (take_from_another(w, lock)) continue;
          // The look released the lock: a stop, or a job queued to this worker meanwhile, found
          // it not idle and notified no one. Waiting now would miss them.
          if (w.stop || w.num_ready > 0) break;
        }
        w.idle = true;
        w.cv.wait(lock);
        w.idle = false;
      }
      if constexpr (kMoves) w.out_of_work.store(false, std::memory_order_relaxed);
      if (w.num_ready == 0) break;  // stopping, nothing left
      int key = 0;
      const std::size_t count = gather(w, lock, key);
      lock.unlock();
      process(w, key, count);
      w.adapter.after_batch();
      lock.lock();
      if constexpr (kMoves) w.num_in_run = 0;
      for (Job* job : w.requeue) {
        if (job->queued.exchange(true, std::memory_order_acq_rel)) continue;
        job->ready_since_ns = now_ns();
        w.ready[static_cast<std::size_t>(job->key.load(std::memory_order_relaxed))].push(job);
        ++w.num_ready;
      }
      w.requeue.clear();
      if constexpr (kMoves) {
        if (has_surplus(w, true)) {
          lock.unlock();
          wake_one_out_of_work(w);
          lock.lock();
        }
      }
    }
  }

  // MovesJobs: more is ready on `w` than it will take now (w.mu held): an idle worker or one
  // about to gather takes one run's worth; a busy one takes nothing before its run ends.
  bool has_surplus(const Worker& w, bool next_run_now) const noexcept {
    return w.num_ready > (next_run_now ? static_cast<std::size_t>(spec().max_batch) : 0);
  }

  // MovesJobs: `w` has surplus ready jobs; one worker out of work (if any) is woken to take one.
  // No mutex held: this takes the other worker's.
  void wake_one_out_of_work(const Worker& w) {
    for (auto& other : workers_) {
      if (other.get() == &w || !other->out_of_work.load(std::memory_order_seq_cst)) continue;
      {
        std::lock_guard lock(other->mu);
        other->poked = true;
      }
      other->cv.notify_one();
      return;
    }
  }

  // MovesJobs: `w` (its mutex held through `lock`) has nothing ready. Takes the waiting job due
  // first from another worker's queue into its own; true when it took one, or when a job was
  // queued somewhere while it looked (look again). Holds one mutex at a time.
  bool take_from_another(Worker& w, std::unique_lock<std::mutex>& lock) {
    w.poked = false;
    w.out_of_work.store(true, std::memory_order_seq_cst);  // before the look: see wake_one_out_of_work
    lock.unlock();
    Job* taken = nullptr;
    for (std::size_t i = 1; i < workers_.size() && taken == nullptr; ++i) {
      Worker& v = *workers_[(static_cast<std::size_t>(w.index) + i) % workers_.size()];
      std::lock_guard other(v.mu);
      taken = take_movable(v);
      if (taken == nullptr) continue;
      --v.num_ready;
      v.adapter.detach();
      w.adapter.attach();
      // Read by schedule() only after it set `queued`, which stays set until w pops the job.
      taken->worker.store(w.index, std::memory_order_relaxed);
      v.counters.jobs_moved.fetch_add(1, std::memory_order_relaxed);
    }
    lock.lock();
    if (taken != nullptr) {
      w.ready[static_cast<std::size_t>(taken->key.load(std::memory_order_relaxed))].push(taken);
      ++w.num_ready;
      return true;
    }
    return std::exchange(w.poked, false);
  }

  // MovesJobs: removes from v's queues (v.mu held) the job due first that is not in v's run and
  // that v's adapter lets go; null when there is none.
  Job* take_movable(Worker& v) {
    std::size_t best_key = 0, best_at = 0;
    Job* best = nullptr;
    const auto in_run_end = v.in_run.begin() + static_cast<std::ptrdiff_t>(v.num_in_run);
    for (std::size_t k = 0; k < v.ready.size(); ++k) {
      const ReadyQueue<Job>& q = v.ready[k];
      for (std::size_t i = 0; i < q.size(); ++i) {
        Job* job = q.at(i);
        if (std::find(v.in_run.begin(), in_run_end, job) != in_run_end || !v.adapter.may_move(*job)) continue;
        if (best == nullptr || job->ready_since_ns + job->defer_ns < best->ready_since_ns + best->defer_ns) {
          best = job;
          best_key = k;
          best_at = i;
        }
        break;  // a queue is in order of arrival: its first movable job is its oldest
      }
    }
    if (best != nullptr) v.ready[best_key].erase(best_at);
    return best;
  }

  // Pops up to max_batch jobs of one key into w.batch (w.mu held); returns how many.
  std::size_t gather(Worker& w, std::unique_lock<std::mutex>& lock, int& key_out) {
    // The key whose oldest ready job is due first goes first (PoolJob::defer_ns; with every
    // defer_ns 0, the one that has waited longest).
    auto due = [&w](std::size_t k) { return w.ready[k].front()->ready_since_ns + w.ready[k].front()->defer_ns; };
    std::size_t key = 0;
    for (std::size_t k = 0; k < w.ready.size(); ++k) {
      if (w.ready[k].empty()) continue;
      if (w.ready[key].empty() || due(k) < due(key)) key = k;
    }
    ReadyQueue<Job>& q = w.ready[key];
    const auto max_batch = static_cast<std::size_t>(spec().max_batch);
    // Wait for a fuller batch only while more jobs could still become ready in time: there is no
    // point waiting for 32 when only 3 are pinned here. Jobs are counted over keys, so with mixed
    // keys this may wait when it need not, bounded by max_gather_wait_us.
    const std::size_t want = std::min(max_batch, w.adapter.load());
    const std::int64_t deadline = q.front()->ready_since_ns + std::int64_t{spec().max_gather_wait_us} * 1000;
    while (!w.stop && q.size() < want) {
      const std::int64_t now = now_ns();
      if (now >= deadline) break;
      w.gathering = true;
      w.cv.wait_for(lock, std::chrono::nanoseconds(deadline - now));
      w.gathering = false;
    }
    std::size_t count = 0;
    while (count < max_batch && !q.empty()) {
      Job* job = q.pop();
      // Cleared before the job is examined, so that work arriving from now on queues it again.
      job->queued.store(false, std::memory_order_release);
      if constexpr (kMoves) w.in_run[count] = job;
      w.batch[count++] = job;
    }
    if constexpr (kMoves) w.num_in_run = count;
    w.num_ready -= count;
    key_out = static_cast<int>(key);
    return count;
  }

  void process(Worker& w, int key, std::size_t count) {
    std::size_t n = 0;  // jobs with something to run, compacted to the front of w.batch
    for (std::size_t k = 0; k < count; ++k) {
      Job& job = *w.batch[k];
      const std::int64_t ready = w.adapter.prepare(job, n);
      if (ready == kNotStaged) continue;
      w.batch[n] = &job;  // n <= k
      w.ready_ns[n] = ready;
      ++n;
    }
    if (n == 0) return;

    const std::int64_t t0 = now_ns();
    for (std::size_t i = 0; i < n; ++i) {
      const double delay_us = static_cast<double>(t0 - w.ready_ns[i]) / 1000.0;
      w.counters.queue_delay.record(delay_us);
      w.window.record(delay_us);
    }
    RunFailure failure;
    std::string why;
    bool ok = true;
    w.deadline.begin(t0);  // from here the watchdog may cancel the run (run_watchdog.h)
    try {
      w.adapter.run(key, n);
    } catch (const Error& e) {
      ok = false;
      // A run the watchdog cancelled fails like any other; end() tells which it was.
      failure.timed_out = w.deadline.end(t0);
      if (failure.timed_out) w.adapter.clear_cancel();
      failure.code = failure.timed_out ? ErrorCode::kInferenceTimeout : e.code();
      why = w.adapter.describe_failure(e, failure.timed_out, n, now_ns() - t0);
      failure.why = why;
      w.counters.run_errors.fetch_add(1, std::memory_order_relaxed);
      if (failure.timed_out) w.counters.run_timeouts.fetch_add(1, std::memory_order_relaxed);
      detail::log(LogLevel::kError, "model '{}', worker {}: {}", spec().name, w.index, why);
    }
    // A run that completed although the watchdog cancelled it at its very end keeps its results;
    // the flag must still be cleared, or the next run would fail at once.
    if (ok && w.deadline.end(t0)) w.adapter.clear_cancel();
    const std::int64_t t1 = now_ns();
    w.counters.inference.record(static_cast<double>(t1 - t0) / 1000.0);
    w.counters.runs.fetch_add(1, std::memory_order_relaxed);
    w.counters.items.fetch_add(n, std::memory_order_relaxed);
    w.counters.batch_sizes[n].fetch_add(1, std::memory_order_relaxed);

    Completion c;
    c.run_start_ns = t0;
    c.failure = ok ? nullptr : &failure;
    for (std::size_t i = 0; i < n; ++i) {
      Job& job = *w.batch[i];
      c.row = i;
      c.ready_ns = w.ready_ns[i];
      const bool more = w.adapter.complete(job, c);
      w.counters.latency.record(static_cast<double>(now_ns() - c.ready_ns) / 1000.0);
      if (more) w.requeue.push_back(&job);
    }
    w.window.roll(t1, w.counters);
  }

  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace brisvox::engine
