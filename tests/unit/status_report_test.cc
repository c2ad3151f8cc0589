// What status shows, read from the scheduler's state: running, prefetched and queued are three
// counts in the job, its nodes, the workers and the pool; a finished job has none running; a
// worker that drained is told apart from one that was lost.
#include "coordinator/status_report.h"

#include <gtest/gtest.h>

#include "coordinator/scheduler.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using testing::MakeJob;

wire::RegisterWorker Worker(const std::string& id, uint32_t slots, uint32_t prefetch) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.slots = slots;
  w.prefetch = prefetch;
  return w;
}

wire::Heartbeat Beat(const std::vector<wire::TaskSpec>& running, bool draining = false) {
  wire::Heartbeat b;
  b.draining = draining;
  for (const auto& t : running) b.running.push_back({t.job_id, t.task_id, t.attempt});
  return b;
}

wire::TaskOutcome Outcome(const wire::TaskSpec& s, bool ok) {
  return testing::OutcomeOf(s, ok, ok ? "" : "exit 1");
}

const wire::WorkerStatus& WorkerNamed(const std::vector<wire::WorkerStatus>& all,
                                      const std::string& id) {
  for (const auto& w : all) {
    if (w.id == id) return w;
  }
  static const wire::WorkerStatus kNone;
  ADD_FAILURE() << "no worker " << id;
  return kNone;
}

// A worker with 2 slots and a prefetch of 10 holds 12 tasks and runs 2 of them.
TEST(StatusReportTest, RunningPrefetchedAndQueuedAreThreeCounts) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 20}}\n"));
  s.RegisterWorker(Worker("w", 2, 10), 0);
  const std::vector<wire::TaskSpec> sent = s.Assign("w");
  ASSERT_EQ(sent.size(), 12u);
  EXPECT_FALSE(s.OnHeartbeat("w", Beat({sent[0], sent[1]}), 10));

  const wire::JobStatus job = s.Status(*s.FindJob("j1"));
  EXPECT_EQ(job.tasks_running, 2u);
  EXPECT_EQ(job.tasks_prefetched, 10u);
  EXPECT_EQ(job.tasks_queued, 8u);
  ASSERT_EQ(job.nodes.size(), 1u);
  EXPECT_EQ(job.nodes[0].tasks_running, 2u);
  EXPECT_EQ(job.nodes[0].tasks_prefetched, 10u);

  const wire::WorkerStatus& w = WorkerNamed(s.Workers(10), "w");
  EXPECT_EQ(w.running, 2u);
  EXPECT_EQ(w.prefetched, 10u);
  EXPECT_EQ(w.slots, 2u);

  wire::CoordinatorStats stats;
  s.FillPoolStats(stats);
  EXPECT_EQ(stats.running_tasks, 2u);
  EXPECT_EQ(stats.prefetched_tasks, 10u);
  // 8 queued + 10 prefetched + 2 running slots, at 2 slots a worker.
  EXPECT_EQ(stats.recommended_workers, 10u);
}

// Before its heartbeat says so, nothing the worker holds has started.
TEST(StatusReportTest, SentButUnreportedTasksArePrefetchedNotRunning) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 3}}\n"));
  s.RegisterWorker(Worker("w", 1, 2), 0);
  ASSERT_EQ(s.Assign("w").size(), 3u);
  const wire::JobStatus job = s.Status(*s.FindJob("j1"));
  EXPECT_EQ(job.tasks_running, 0u);
  EXPECT_EQ(job.tasks_prefetched, 3u);
  EXPECT_EQ(job.tasks_queued, 0u);
  wire::CoordinatorStats stats;
  s.FillPoolStats(stats);
  EXPECT_EQ(stats.recommended_workers, 3u) << "three tasks wait for its one slot";
}

// A job that failed while other tasks of it were still out shows none running, for ever after.
TEST(StatusReportTest, AFailedJobHasNothingRunningOrPrefetched) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, retries: 0, params: {tasks: 4}}\n"));
  s.RegisterWorker(Worker("w", 2, 2), 0);
  const std::vector<wire::TaskSpec> sent = s.Assign("w");
  ASSERT_EQ(sent.size(), 4u);
  s.OnHeartbeat("w", Beat({sent[0], sent[1]}), 10);
  ASSERT_EQ(s.OnOutcome("w", Outcome(sent[0], false)), OutcomeKind::kFailed);

  const wire::JobStatus job = s.Status(*s.FindJob("j1"));
  EXPECT_EQ(job.state, job::JobPhase::kFailed);
  EXPECT_EQ(job.tasks_running, 0u);
  EXPECT_EQ(job.tasks_prefetched, 0u);
  EXPECT_EQ(job.tasks_queued, 0u);
  EXPECT_EQ(job.tasks_failed, 1u);
  EXPECT_EQ(job.nodes[0].tasks_running, 0u);
  EXPECT_EQ(job.nodes[0].tasks_prefetched, 0u);
  // The running task's late success is dropped and changes nothing.
  EXPECT_EQ(s.OnOutcome("w", Outcome(sent[1], true)), OutcomeKind::kDropped);
  EXPECT_EQ(s.Status(*s.FindJob("j1")).tasks_running, 0u);
}

TEST(StatusReportTest, ACancelledOrSucceededJobHasNothingRunning) {
  Scheduler s(5000);
  s.AddJob(MakeJob("ok", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 1}}\n"));
  s.AddJob(MakeJob("gone", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 3}}\n"));
  s.RegisterWorker(Worker("w", 2, 2), 0);
  const std::vector<wire::TaskSpec> sent = s.Assign("w");
  ASSERT_EQ(sent.size(), 4u);
  s.OnHeartbeat("w", Beat(sent), 10);
  for (const auto& t : sent) {
    if (t.job_id == "ok") {
      ASSERT_EQ(s.OnOutcome("w", Outcome(t, true)), OutcomeKind::kCommitted);
    }
  }
  s.Cancel("gone");
  for (const char* id : {"ok", "gone"}) {
    const wire::JobStatus job = s.Status(*s.FindJob(id));
    EXPECT_TRUE(job.state == job::JobPhase::kSucceeded || job.state == job::JobPhase::kCancelled)
        << job::JobPhaseName(job.state);
    EXPECT_EQ(job.tasks_running, 0u) << id;
    EXPECT_EQ(job.tasks_prefetched, 0u) << id;
  }
}

// Drained: it finished its drain and its last beat said it runs nothing. Lost: given up on.
TEST(StatusReportTest, ADrainedWorkerShowsDrainedAndASilentOneLost) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 10}}\n"));
  s.RegisterWorker(Worker("leaves", 1, 0), 0);
  s.RegisterWorker(Worker("dies", 1, 0), 0);
  const std::vector<wire::TaskSpec> first = s.Assign("leaves");
  ASSERT_EQ(first.size(), 1u);
  ASSERT_EQ(s.Assign("dies").size(), 1u);
  s.OnHeartbeat("leaves", Beat(first, true), 100);
  EXPECT_EQ(WorkerNamed(s.Workers(100), "leaves").state, pool::WorkerState::kDraining);
  ASSERT_EQ(s.OnOutcome("leaves", Outcome(first[0], true)), OutcomeKind::kCommitted);
  EXPECT_TRUE(s.OnHeartbeat("leaves", Beat({}, true), 200));
  EXPECT_EQ(WorkerNamed(s.Workers(200), "leaves").state, pool::WorkerState::kDrained);

  // "dies" goes silent while "leaves", drained, beats no more: a live worker is needed to tell a
  // dead one from a cut link, so one joins.
  s.RegisterWorker(Worker("new", 1, 0), 5000);
  ASSERT_TRUE(s.registry().Heard("new", 5400));
  ASSERT_EQ(s.ReapSilentWorkers(5400).size(), 0u) << "its task never started: re-queued, no loss";
  EXPECT_EQ(WorkerNamed(s.Workers(5400), "dies").state, pool::WorkerState::kLost);
  EXPECT_EQ(WorkerNamed(s.Workers(5400), "leaves").state, pool::WorkerState::kDrained);
  EXPECT_EQ(s.registry().workers_lost_total(), 1u);
  EXPECT_EQ(s.Status(*s.FindJob("j1")).tasks_prefetched, 0u);
}

}  // namespace
}  // namespace coupler::coordinator
