// The worker pool as jobs share it and as it changes under a running job:
//  - a small job submitted behind a 200,000-task job of the same priority is not stuck behind
//    it (jobs of one priority take turns), and such a big job is admitted at all;
//  - `coupler drain` on a busy worker: it finishes what it holds, is sent nothing more, and
//    the job loses and re-runs nothing;
//  - a worker that joins mid-job is given some of the job's queued tasks.
// These are what someone running a shared pool relies on; a scheduler change that starves a
// job or keeps feeding a draining worker would pass every single-job test.
#include <gtest/gtest.h>

#include "coordinator/store/state_store.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

fs::path WriteNoopSpec(const fs::path& dir, const std::string& name, int tasks, int sleep_ms) {
  const fs::path spec = dir / (name + ".yaml");
  WriteFile(spec, "name: " + name + "\n"
                  "workdir: work\n"
                  "priority: 0\n"
                  "nodes:\n"
                  "  - {id: n, op: noop, params: {tasks: " + std::to_string(tasks) +
                  ", sleep_ms: " + std::to_string(sleep_ms) + "}}\n");
  return spec;
}

// Tasks of `job` that `worker` committed, as the coordinator's store has them on disk. A status
// request flushes the store first, so call cluster.Job() just before this.
std::optional<size_t> CommitsBy(const Cluster& cluster, const std::string& job,
                                const std::string& worker) {
  auto store = store::StateStore::Open(cluster.state().string(), store::OpenMode::kReadOnly);
  if (!store.ok()) return std::nullopt;
  auto commits = (*store)->LoadCommits(job);
  if (!commits.ok()) return std::nullopt;
  size_t n = 0;
  for (const auto& c : *commits) n += c.worker_id == worker ? 1 : 0;
  return n;
}

TEST(PoolTest, SmallJobBehindA200000TaskJobOfEqualPriorityFinishesFirst) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  cluster.StartWorker("w2", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  // 200,000 tasks of 1 ms on 4 slots is at least 50 s of work; the small job is 10 ms of it.
  constexpr uint64_t kBigTasks = 200'000;
  std::string why;
  // Submit answers once the job is planned and stored; the CLI's own deadline bounds the wait.
  const std::string big = cluster.Submit(WriteNoopSpec(cluster.dir(), "big", kBigTasks, 1), &why);
  ASSERT_FALSE(big.empty()) << "the 200,000-task job was not accepted: " << why << "\n"
                            << cluster.Logs();
  std::optional<JobView> big_status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        big_status = cluster.Job(big);
        return big_status && big_status->state == "running" && big_status->done > 0;
      },
      60s, 50ms))
      << "the big job never started running\n" << cluster.Logs();
  EXPECT_EQ(big_status->total, kBigTasks);

  const std::string small = cluster.Submit(WriteNoopSpec(cluster.dir(), "small", 10, 1), &why);
  ASSERT_FALSE(small.empty()) << why << cluster.Logs();
  const auto small_status = cluster.WaitJobFinished(small, 90s);
  // Read the big job right after: it can only have progressed since the small one finished.
  const auto big_then = cluster.Job(big);
  ASSERT_TRUE(small_status) << cluster.Logs();
  ASSERT_EQ(small_status->state, "succeeded") << small_status->error << "\n" << cluster.Logs();
  EXPECT_EQ(small_status->done, 10u);
  EXPECT_EQ(small_status->attempts, 10u);
  ASSERT_TRUE(big_then) << cluster.Logs();
  EXPECT_FALSE(big_then->finished())
      << "the big job finished before the small one: the small job waited behind it";
  EXPECT_GT(big_then->queued, 0u) << "the big job had nothing left queued";
  EXPECT_LT(big_then->done, kBigTasks);

  // Cancel the rest so the test ends now rather than in a minute.
  const CommandResult cancel = cluster.Cli({"cancel", big});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err << cluster.Logs();
  const auto big_final = cluster.WaitJobFinished(big, 60s);
  ASSERT_TRUE(big_final) << cluster.Logs();
  EXPECT_EQ(big_final->state, "cancelled") << cluster.Logs();
}

TEST(PoolTest, DrainedWorkerFinishesItsTasksAndLosesNone) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  // A fixed small prefetch, so w2 holds only a few tasks when drained and most of the job is
  // still queued: a coordinator that kept feeding it would visibly run more on it.
  cluster.StartWorker("w1", 2, {"--prefetch", "1"});
  cluster.StartWorker("w2", 2, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  // 160 tasks of 200 ms on 4 slots is 8 s: the job is still running when the drain lands, even
  // when a loaded machine makes every status poll slow.
  constexpr uint64_t kTasks = 160;
  std::string why;
  const std::string job = cluster.Submit(WriteNoopSpec(cluster.dir(), "drain", kTasks, 200), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // Drain w2 once it has done some work and is running more.
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto st = cluster.Job(job);
        if (!st || st->finished() || st->done < 4) return false;
        auto workers = cluster.Workers();
        return workers.count("w2") != 0 && workers["w2"].second > 0;
      },
      60s, 50ms))
      << "w2 never held a task after 4 were done\n" << cluster.Logs();
  const CommandResult drain = cluster.Cli({"drain", "w2"});
  ASSERT_EQ(drain.exit_code, 0) << drain.err << drain.out << cluster.Logs();

  // From the drain on, what w2 holds can only shrink: read it, then (after a flush) what w2
  // has committed. Every commit of w2 after that read is one of the tasks it held then.
  auto workers = cluster.Workers();
  ASSERT_EQ(workers.count("w2"), 1u) << cluster.Logs();
  const std::string state_after_drain = workers["w2"].first;
  EXPECT_TRUE(state_after_drain == "draining" || state_after_drain == "drained")
      << "w2 is " << state_after_drain << " after `coupler drain w2`";
  const uint64_t held_at_drain = workers["w2"].second;
  const auto mid = cluster.Job(job);
  ASSERT_TRUE(mid) << cluster.Logs();
  const auto w2_before = CommitsBy(cluster, job, "w2");
  ASSERT_TRUE(w2_before) << "cannot read the coordinator's store";
  ASSERT_FALSE(mid->finished()) << "the job ended before the drain took effect; nothing tested";
  ASSERT_GT(mid->queued, 0u) << "no task was left to send to w2 after the drain; nothing tested";

  // The drained worker leaves on its own once it has finished, cleanly.
  const auto code = cluster.worker("w2").WaitExit(60s);
  ASSERT_TRUE(code) << "w2 did not leave within 60 s of the drain\n" << cluster.Logs();
  EXPECT_EQ(*code, 0) << cluster.Logs();
  // Its last heartbeat, sent as it leaves, says it holds nothing: drained, not lost.
  std::string state_after_exit;
  EXPECT_TRUE(WaitUntil(
      [&] {
        state_after_exit = cluster.Workers()["w2"].first;
        return state_after_exit == "drained";
      },
      30s, 100ms))
      << "w2 is " << state_after_exit << " after it left\n" << cluster.Logs();

  const auto final_status = cluster.WaitJobFinished(job, 90s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << "\n" << cluster.Logs();
  EXPECT_EQ(final_status->total, kTasks);
  EXPECT_EQ(final_status->done, kTasks) << "a task was lost";
  EXPECT_EQ(final_status->attempts, kTasks) << "a task was re-run";

  const auto w2_after = CommitsBy(cluster, job, "w2");
  const auto w1_after = CommitsBy(cluster, job, "w1");
  ASSERT_TRUE(w2_after && w1_after) << "cannot read the coordinator's store";
  EXPECT_EQ(*w1_after + *w2_after, kTasks);
  EXPECT_LE(*w2_after - *w2_before, held_at_drain)
      << "w2 committed " << *w2_after - *w2_before << " tasks after the drain but held only "
      << held_at_drain << ": it was sent new work while draining\n" << cluster.Logs();
}

TEST(PoolTest, AWorkerThatJoinsMidJobGetsWorkAtOnce) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  // 100 tasks of 100 ms on one slot is 10 s: ample time for a second worker to start and join.
  constexpr uint64_t kTasks = 100;
  std::string why;
  const std::string job = cluster.Submit(WriteNoopSpec(cluster.dir(), "grow", kTasks, 100), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto st = cluster.Job(job);
        return st && st->done > 0;
      },
      60s, 50ms))
      << cluster.Logs();

  cluster.StartWorker("w2", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();
  const auto at_join = cluster.Job(job);
  ASSERT_TRUE(at_join) << cluster.Logs();
  ASSERT_GT(at_join->queued, 0u) << "w2 joined after every task was handed out; nothing tested";

  // The wait ends at the first sign of w2 running a task, or when the job ends without one.
  bool w2_ran = false;
  WaitUntil(
      [&] {
        auto workers = cluster.Workers();
        w2_ran = workers.count("w2") != 0 && workers["w2"].second > 0;
        auto st = cluster.Job(job);
        return w2_ran || !st || st->finished();
      },
      60s, 20ms);
  EXPECT_TRUE(w2_ran) << "w2 joined with tasks queued but was never given one\n" << cluster.Logs();

  const auto final_status = cluster.WaitJobFinished(job, 90s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << "\n" << cluster.Logs();
  EXPECT_EQ(final_status->done, kTasks);
  EXPECT_EQ(final_status->attempts, kTasks);
  const auto by_w2 = CommitsBy(cluster, job, "w2");
  ASSERT_TRUE(by_w2) << "cannot read the coordinator's store";
  EXPECT_GT(*by_w2, 0u) << "w2 committed none of the job's tasks";
}

}  // namespace
}  // namespace coupler::itest
