// The one batching pool, on its own: gather bounds, keys, jobs that take several steps (a decoder's
// sequences joining and leaving between steps), failed and cancelled runs, and the statistics it
// keeps, with an adapter that computes something checkable (each job's running sum). The real
// adapters (Silero, Smart Turn) are tested through the engine in the other engine tests.
#include "engine/pool/batch_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/pool/run_watchdog.h"

namespace brisvox::engine {
namespace {

using namespace std::chrono_literals;

struct SumJob : PoolJob {
  int steps_left = 1;          // runs this job still needs
  std::int64_t input = 0;      // added to total at each step
  std::int64_t total = 0;      // what the runs computed for it
  int steps_done = 0;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  bool timed_out_seen = false;
  std::atomic<int> in_runs{0};             // runs it is in right now: never more than one
  std::atomic<unsigned> ran_on{0};         // bit w: worker w ran a step of it
  bool stays = false;                      // MovingSumAdapter::may_move says no
};

// What the adapter saw, for the test thread to check (its own mutex: the worker writes it).
struct Log {
  std::mutex mu;
  std::vector<std::vector<int>> batch_keys;  // the key of each row of each run
  int fail_run = -1;     // the index of the run that throws (-1: none)
  bool hang_run = false; // the next run spins until cancelled
  int runs = 0;
  int run_sleep_us = 0;  // each run takes this long (set before the workers start)
};

class SumAdapter {
 public:
  using Job = SumJob;
  SumAdapter(int max_batch, Log& log, int worker = 0)
      : rows_(static_cast<std::size_t>(max_batch)), log_(&log), worker_(worker) {}

  std::int64_t prepare(SumJob& job, std::size_t row) {
    if (job.steps_left <= 0) return kNotStaged;  // queued again after its last step
    EXPECT_EQ(job.in_runs.fetch_add(1), 0) << "a job in two runs at once";
    job.ran_on.fetch_or(1u << worker_);
    rows_[row] = &job;
    // Not job.ready_since_ns: that belongs to the pool's lock, and a job may be queued again
    // while it is here (the moving-jobs test does so).
    return now_ns();
  }
  void run(int key, std::size_t n) {
    std::vector<int> keys;
    bool fail = false, hang = false;
    {
      std::lock_guard lock(log_->mu);
      for (std::size_t i = 0; i < n; ++i) keys.push_back(rows_[i]->key);
      EXPECT_EQ(rows_[0]->key, key);
      log_->batch_keys.push_back(keys);
      fail = log_->runs == log_->fail_run;
      hang = log_->hang_run;
      log_->hang_run = false;
      ++log_->runs;
    }
    if (log_->run_sleep_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(log_->run_sleep_us));
    if (hang) {
      while (!cancelled_.load()) std::this_thread::sleep_for(1ms);
      throw Error(ErrorCode::kRuntime, "run cancelled");
    }
    if (fail) throw Error(ErrorCode::kRuntime, "this run fails on purpose");
    for (std::size_t i = 0; i < n; ++i) out_[i] = rows_[i]->input;  // the "model": identity
  }
  bool complete(SumJob& job, const Completion& c) {
    job.in_runs.fetch_sub(1);
    if (c.failure != nullptr) {
      job.failures.fetch_add(1);
      job.timed_out_seen = c.failure->timed_out;
    } else {
      job.total += out_[c.row];
    }
    ++job.steps_done;
    if (--job.steps_left > 0) return true;  // another step: the pool queues it again
    load_.fetch_sub(1);
    job.done.store(true);
    return false;
  }
  void after_batch() {}
  void cancel_run() noexcept { cancelled_.store(true); }
  void clear_cancel() noexcept { cancelled_.store(false); }
  std::string describe_failure(const Error& e, bool timed_out, std::size_t n, std::int64_t) const {
    return std::string(timed_out ? "timed out: " : "failed: ") + e.what() + " (" + std::to_string(n) + " rows)";
  }
  std::size_t load() const noexcept { return load_.load(); }
  void add_load() noexcept { load_.fetch_add(1); }
  void drop_load() noexcept { load_.fetch_sub(1); }

 private:
  std::vector<SumJob*> rows_;
  std::array<std::int64_t, 64> out_{};
  Log* log_;
  std::atomic<std::size_t> load_{0};
  std::atomic<bool> cancelled_{false};
  int worker_;
};

using SumPool = BatchPool<SumAdapter>;
static_assert(!SumPool::kMoves, "jobs stay pinned unless the adapter lets them move");

// The same, for jobs that carry their whole state and may move between steps (Piper's sessions).
class MovingSumAdapter : public SumAdapter {
 public:
  using SumAdapter::SumAdapter;
  bool may_move(const SumJob& job) const noexcept { return !job.stays; }
  void attach() noexcept { add_load(); }
  void detach() noexcept { drop_load(); }
};

using MovingSumPool = BatchPool<MovingSumAdapter>;
static_assert(MovingSumPool::kMoves);

ModelSpec spec(int workers, int max_batch, int gather_wait_us) {
  ModelSpec s;
  s.name = "sum";
  s.path = "-";
  s.num_workers = workers;
  s.max_batch = max_batch;
  s.max_gather_wait_us = gather_wait_us;
  return s;
}

void submit(SumPool& pool, SumJob& job) {
  job.worker = pool.least_loaded_worker();
  pool.adapter(job.worker).add_load();
  pool.schedule(&job);
}

bool wait_done(std::vector<SumJob>& jobs, std::chrono::seconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (auto& j : jobs) {
    while (!j.done.load()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(1ms);
    }
  }
  return true;
}

TEST(BatchPool, RunsAreBoundedByMaxBatchAndNeverMixKeys) {
  Log log;
  SumPool pool(spec(1, 4, 50'000), PoolShape{2, 64}, [&](int) { return SumAdapter(4, log); });
  std::vector<SumJob> jobs(30);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].key = static_cast<int>(i % 2);
    jobs[i].input = static_cast<std::int64_t>(i);
  }
  // Queued before the worker starts, so that they are queued together however the threads are
  // scheduled: with the worker running, a slow submitter (TSan, a loaded machine) lets it finish
  // each job before the next arrives, and every run holds one job.
  for (auto& j : jobs) submit(pool, j);
  pool.start();
  ASSERT_TRUE(wait_done(jobs));
  pool.stop();
  for (std::size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(jobs[i].total, static_cast<std::int64_t>(i));
  std::size_t rows = 0;
  for (const auto& keys : log.batch_keys) {
    ASSERT_LE(keys.size(), 4u);
    for (int k : keys) EXPECT_EQ(k, keys[0]) << "a run holds one key";
    rows += keys.size();
  }
  EXPECT_EQ(rows, jobs.size());
  EXPECT_EQ(log.batch_keys.size(), 8u) << "15 jobs of each key queued together: runs of 4, 4, 4 and 3";
  const ModelStats st = pool.stats();
  EXPECT_EQ(st.items, jobs.size());
  EXPECT_EQ(st.runs, log.batch_keys.size());
  EXPECT_EQ(st.queue_delay.count(), jobs.size());
  EXPECT_EQ(st.latency.count(), jobs.size());
  EXPECT_EQ(st.inference.count(), st.runs);
  std::uint64_t by_size = 0;
  for (std::size_t b = 1; b < st.batch_size_counts.size(); ++b) by_size += b * st.batch_size_counts[b];
  EXPECT_EQ(by_size, jobs.size());
}

TEST(BatchPool, TheKeyWhoseOldestJobIsDueFirstRunsFirst) {
  // Queued before the worker starts, in this order: a (key 1), b (key 0). Without defer_ns the
  // older, a, runs first; with a's defer_ns past b's queueing, b does (Piper: a reply's first
  // sentence before another reply's later one).
  for (const bool defer : {false, true}) {
    Log log;
    SumPool pool(spec(1, 1, 0), PoolShape{2, 4}, [&](int) { return SumAdapter(1, log); });
    std::vector<SumJob> jobs(2);
    jobs[0].key = 1;
    jobs[0].defer_ns = defer ? 10'000'000'000 : 0;
    jobs[1].key = 0;
    submit(pool, jobs[0]);
    std::this_thread::sleep_for(1ms);
    submit(pool, jobs[1]);
    pool.start();
    ASSERT_TRUE(wait_done(jobs));
    pool.stop();
    ASSERT_EQ(log.batch_keys.size(), 2u);
    EXPECT_EQ(log.batch_keys[0], std::vector<int>{defer ? 0 : 1}) << (defer ? "deferred" : "not deferred");
  }
}

TEST(BatchPool, JobsOfSeveralStepsStayPinnedAndJoinOrLeaveBetweenSteps) {
  Log log;
  SumPool pool(spec(2, 8, 1000), PoolShape{1, 64}, [&](int w) { return SumAdapter(8, log, w); });
  std::vector<SumJob> jobs(20);
  int total_steps = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].steps_left = 1 + static_cast<int>(i % 7);  // 1 to 7 steps: some leave early
    jobs[i].input = static_cast<std::int64_t>(i) + 1;
    total_steps += jobs[i].steps_left;
  }
  // Half are queued before the workers start, so that their first steps share runs however the
  // threads are scheduled (submitted one by one to running workers, on a loaded machine each job
  // could run all its steps before the next arrived: CI saw 77 runs for 77 steps); the rest join
  // while the first are between steps.
  for (std::size_t i = 0; i < 10; ++i) submit(pool, jobs[i]);
  pool.start();
  std::this_thread::sleep_for(2ms);
  for (std::size_t i = 10; i < jobs.size(); ++i) submit(pool, jobs[i]);
  std::vector<int> pinned;
  for (auto& j : jobs) pinned.push_back(j.worker.load());
  ASSERT_TRUE(wait_done(jobs));
  pool.stop();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const int steps = 1 + static_cast<int>(i % 7);
    EXPECT_EQ(jobs[i].steps_done, steps) << i;
    EXPECT_EQ(jobs[i].total, steps * jobs[i].input) << i;
    EXPECT_EQ(jobs[i].worker.load(), pinned[i]) << "a job stays on its worker";
    EXPECT_EQ(jobs[i].ran_on.load(), 1u << pinned[i]) << "every step on its worker";
  }
  const ModelStats st = pool.stats();
  EXPECT_EQ(st.items, static_cast<std::uint64_t>(total_steps));
  EXPECT_LT(st.runs, static_cast<std::uint64_t>(total_steps)) << "steps of different jobs share runs";
  EXPECT_EQ(st.jobs_moved, 0u);
}

TEST(BatchPool, AWorkerOutOfWorkTakesMovableJobsFromABusyOneBetweenSteps) {
  // Every job pinned to worker 0, as sessions opened on one worker whose replies outlast the
  // other's: worker 1 takes waiting jobs from worker 0's queue. One job may not move (Piper: a
  // retired session). A thread queues jobs again at random, as readers freeing room do, also while
  // they run: a job must never be in two runs at once.
  Log log;
  log.run_sleep_us = 500;
  MovingSumPool pool(spec(2, 1, 0), PoolShape{2, 64}, [&](int w) { return MovingSumAdapter(1, log, w); });
  std::vector<SumJob> jobs(12);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].steps_left = 8;
    jobs[i].input = static_cast<std::int64_t>(i) + 1;
    jobs[i].key = static_cast<int>(i % 2);
    jobs[i].stays = i == 0;
    jobs[i].worker = 0;
    pool.adapter(0).attach();
  }
  for (auto& j : jobs) pool.schedule(&j);
  std::atomic<bool> stop_poking{false};
  std::thread poker([&] {
    for (std::size_t i = 0; !stop_poking.load(); i = (i + 5) % jobs.size()) {
      pool.schedule(&jobs[i]);
      std::this_thread::sleep_for(100us);
    }
  });
  pool.start();
  const bool done = wait_done(jobs);
  stop_poking.store(true);
  poker.join();
  pool.stop();
  ASSERT_TRUE(done);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(jobs[i].steps_done, 8) << i;
    EXPECT_EQ(jobs[i].total, 8 * jobs[i].input) << i;
  }
  EXPECT_EQ(jobs[0].ran_on.load(), 1u) << "the job that may not move ran on its worker only";
  unsigned ran_on = 0;
  for (auto& j : jobs) ran_on |= j.ran_on.load();
  EXPECT_EQ(ran_on, 3u) << "both workers ran steps";
  EXPECT_GT(pool.stats().jobs_moved, 0u);
  EXPECT_EQ(pool.adapter(0).load() + pool.adapter(1).load(), 0u) << "each move carried its load along";
}

// A moving pool whose workers take their time looking at each other's queues (may_move is asked
// under the other worker's lock, with the looking worker's own released).
class SlowLookAdapter : public MovingSumAdapter {
 public:
  SlowLookAdapter(Log& log, int worker) : MovingSumAdapter(1, log, worker) {}
  bool may_move(const SumJob& job) const noexcept {
    std::this_thread::sleep_for(30ms);
    return MovingSumAdapter::may_move(job);
  }
};
using SlowLookPool = BatchPool<SlowLookAdapter>;

TEST(BatchPool, AWorkerLookingForWorkMissesNeitherAJobQueuedToItNorTheStop) {
  // Worker 1 runs one job (100 ms) with another waiting that may not move; worker 0, out of work,
  // looks at that queue for 30-60 ms. A job queued to worker 0, or the stop, during the look must
  // still reach it: once both were missed (it waited for good: the job stuck in its queue,
  // ~Engine hung joining it). stop() takes the workers' locks in order, so it reaches worker 0
  // while worker 0 looks at worker 1.
  Log log;
  log.run_sleep_us = 100'000;
  for (const bool stop_during_look : {false, true}) {
    SlowLookPool pool(spec(2, 1, 0), PoolShape{2, 64}, [&](int w) { return SlowLookAdapter(log, w); });
    std::vector<SumJob> jobs(3);
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      jobs[i].input = 1;
      jobs[i].stays = true;
      jobs[i].worker = i < 2 ? 1 : 0;
      pool.adapter(jobs[i].worker).attach();
    }
    pool.schedule(&jobs[0]);
    pool.schedule(&jobs[1]);
    pool.start();
    std::this_thread::sleep_for(10ms);  // worker 0 is looking
    if (!stop_during_look) {
      pool.schedule(&jobs[2]);
      EXPECT_TRUE(wait_done(jobs, 5s)) << "the job queued to worker 0 during its look waited with worker 0 idle";
    }
    auto stopped = std::async(std::launch::async, [&] { pool.stop(); });
    if (stopped.wait_for(10s) != std::future_status::ready) {
      ADD_FAILURE() << "stop() did not return: worker 0 missed it during its look";
      std::_Exit(1);  // its thread cannot be joined
    }
  }
}

TEST(BatchPool, AFailedRunReachesEveryJobOfItsRunAndThePoolGoesOn) {
  Log log;
  log.fail_run = 0;
  SumPool pool(spec(1, 4, 20'000), PoolShape{1, 64}, [&](int) { return SumAdapter(4, log); });
  pool.start();
  std::vector<SumJob> jobs(12);
  for (auto& j : jobs) {
    j.steps_left = 2;
    j.input = 5;
  }
  for (auto& j : jobs) submit(pool, j);
  ASSERT_TRUE(wait_done(jobs));
  pool.stop();
  int failed = 0;
  for (auto& j : jobs) {
    failed += j.failures.load();
    EXPECT_EQ(j.steps_done, 2);
    EXPECT_EQ(j.total, (2 - j.failures.load()) * 5) << "a failed step computes nothing, the next one does";
  }
  {
    std::lock_guard lock(log.mu);
    EXPECT_EQ(static_cast<std::size_t>(failed), log.batch_keys.at(0).size()) << "exactly the first run's jobs";
  }
  const ModelStats st = pool.stats();
  EXPECT_EQ(st.run_errors, 1u);
  EXPECT_EQ(st.run_timeouts, 0u);
}

TEST(BatchPool, ARunPastItsDeadlineIsCancelledThroughTheAdapter) {
  Log log;
  log.hang_run = true;
  ModelSpec with_deadline = spec(1, 4, 0);
  with_deadline.run_timeout_ms = 50;
  SumPool pool(with_deadline, PoolShape{1, 64}, [&](int) { return SumAdapter(4, log); });
  RunWatchdog watchdog;
  pool.watch_runs(watchdog);
  watchdog.start();
  pool.start();
  std::vector<SumJob> hung(1);
  hung[0].input = 1;
  const auto t0 = std::chrono::steady_clock::now();
  submit(pool, hung[0]);
  ASSERT_TRUE(wait_done(hung));
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(hung[0].failures.load(), 1);
  EXPECT_TRUE(hung[0].timed_out_seen) << "the failure says it was the deadline";
  EXPECT_EQ(hung[0].total, 0);
  EXPECT_EQ(pool.stats().run_timeouts, 1u);
  EXPECT_EQ(pool.stats().run_errors, 1u);
  EXPECT_LT(took, 2s) << "cancelled at about the 50 ms deadline";
  // The pool goes on: the next runs are not cancelled.
  std::vector<SumJob> more(4);
  for (auto& j : more) {
    j.input = 3;
    submit(pool, j);
  }
  ASSERT_TRUE(wait_done(more));
  for (auto& j : more) EXPECT_EQ(j.total, 3);
  pool.stop();
  watchdog.stop();
  EXPECT_EQ(pool.stats().run_timeouts, 1u);
}

}  // namespace
}  // namespace brisvox::engine
