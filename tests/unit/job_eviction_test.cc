// Finished jobs leave the scheduler's memory beyond the newest `keep` (Scheduler::EvictFinished),
// oldest end first, never while a worker still holds a task of theirs; a job retried since its
// end is not evicted for that end.
#include <gtest/gtest.h>

#include "coordinator/scheduler.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using testing::MakeJob;

constexpr const char* kTwo = "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 2}}\n";

wire::TaskOutcome Ok(const std::string& job, uint64_t task) {
  wire::TaskOutcome o;
  o.job_id = job;
  o.task_id = task;
  o.ok = true;
  return o;
}

// Runs every task of `job` on w1 to success and releases its end.
void Finish(Scheduler& s, const std::string& job) {
  for (const wire::TaskSpec& t : s.Assign("w1")) ASSERT_EQ(s.OnOutcome("w1", Ok(job, t.task_id)), OutcomeKind::kCommitted);
  ASSERT_TRUE(s.FindJob(job)->finished());
  s.ReleaseFinished(job);
}

TEST(JobEvictionTest, FinishedJobsBeyondTheNewestKeptLeaveOldestFirst) {
  Scheduler s(5000);
  wire::RegisterWorker w;
  w.worker_id = "w1";
  w.slots = 8;
  s.RegisterWorker(w, 0);
  for (const char* id : {"j1", "j2", "j3"}) {
    s.AddJob(MakeJob(id, kTwo));
    Finish(s, id);
  }
  s.AddJob(MakeJob("j4", kTwo));  // running: never evicted
  const auto evicted = s.EvictFinished(1);
  ASSERT_EQ(evicted.size(), 2u);
  EXPECT_EQ(evicted[0].first, "j1");
  EXPECT_EQ(evicted[1].first, "j2");
  EXPECT_EQ(evicted[0].second, JobPhase::kSucceeded);
  EXPECT_EQ(s.FindJob("j1"), nullptr);
  EXPECT_EQ(s.FindJob("j2"), nullptr);
  ASSERT_NE(s.FindJob("j3"), nullptr);
  ASSERT_NE(s.FindJob("j4"), nullptr);
  // The pool goes on around the holes: j4's tasks are assigned and commit.
  Finish(s, "j4");
  EXPECT_EQ(s.EvictFinished(1).size(), 1u);
  EXPECT_EQ(s.FindJob("j3"), nullptr);
  wire::CoordinatorStats stats;
  s.FillPoolStats(stats);
  EXPECT_EQ(s.Workers(0).size(), 1u);
}

// An age limit too: a job that finished before it leaves even among the newest kept.
TEST(JobEvictionTest, AJobFinishedBeforeTheAgeLimitLeavesEvenAmongTheNewest) {
  Scheduler s(5000);
  wire::RegisterWorker w;
  w.worker_id = "w1";
  w.slots = 8;
  s.RegisterWorker(w, 0);
  s.AddJob(MakeJob("old", kTwo));
  s.FindJob("old")->facts().finished_ms = 1'000;
  Finish(s, "old");
  s.AddJob(MakeJob("new", kTwo));
  s.FindJob("new")->facts().finished_ms = 9'000;
  Finish(s, "new");
  EXPECT_TRUE(s.EvictFinished(10, 500).empty());
  const auto evicted = s.EvictFinished(10, 5'000);
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].first, "old");
  EXPECT_NE(s.FindJob("new"), nullptr);
}

TEST(JobEvictionTest, AJobWithATaskStillOutWaitsAndHoldsBackNewerOnes) {
  Scheduler s(5000);
  wire::RegisterWorker w;
  w.worker_id = "w1";
  w.slots = 8;
  s.RegisterWorker(w, 0);
  s.AddJob(MakeJob("j1", kTwo));
  ASSERT_EQ(s.Assign("w1").size(), 2u);
  // Task 0 fails for good (bad input is never retried): the job failed, task 1 still on w1.
  wire::TaskOutcome bad = Ok("j1", 0);
  bad.ok = false;
  bad.error = "bad row";
  bad.error_code = static_cast<uint16_t>(StatusCode::kInvalidData);
  ASSERT_EQ(s.OnOutcome("w1", bad), OutcomeKind::kFailed);
  ASSERT_TRUE(s.FindJob("j1")->finished());
  s.ReleaseFinished("j1");
  s.AddJob(MakeJob("j2", kTwo));
  Finish(s, "j2");
  EXPECT_TRUE(s.EvictFinished(0).empty()) << "j1's task 1 is out; j2 waits behind it";
  ASSERT_NE(s.FindJob("j1"), nullptr);
  // w1 reports task 1: nothing of j1 is out any more.
  s.OnOutcome("w1", Ok("j1", 1));
  const auto evicted = s.EvictFinished(0);
  ASSERT_EQ(evicted.size(), 2u);
  EXPECT_EQ(evicted[0].second, JobPhase::kFailed);
  EXPECT_EQ(evicted[1].first, "j2");
}

}  // namespace
}  // namespace coupler::coordinator
