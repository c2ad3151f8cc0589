#include "coordinator/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using ::testing::HasSubstr;

using testing::MakeJob;

wire::RegisterWorker Worker(const std::string& id, uint32_t slots, uint32_t prefetch = 0) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.slots = slots;
  w.prefetch = prefetch;
  return w;
}

wire::TaskOutcome Ok(const wire::TaskSpec& s) { return testing::OutcomeOf(s); }

wire::TaskOutcome Failed(const wire::TaskSpec& s, const std::string& error) {
  wire::TaskOutcome o = Ok(s);
  o.ok = false;
  o.error = error;
  return o;
}

// The worker's heartbeat says these are running now: losing it from here on costs them.
void Started(Scheduler& s, const std::string& worker, const std::vector<wire::TaskSpec>& tasks) {
  std::vector<wire::TaskAttempt> running;
  for (const auto& t : tasks) running.push_back({t.job_id, t.task_id, t.attempt});
  s.MarkStarted(worker, running);
}

constexpr const char* kStatsJob = R"(name: s
nodes:
  - {id: import, op: import_csv, inputs: [/data/digits.csv], params: {shards: 3}}
  - {id: stats, op: column_stats, inputs: [import]}
)";

TEST(SchedulerTest, DispatchIsCreditBased) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 100}}\n"));
  s.RegisterWorker(Worker("w1", 2, 3), 0);
  EXPECT_EQ(s.Assign("w1").size(), 5u);  // slots + prefetch
  EXPECT_TRUE(s.Assign("w1").empty());   // no credit until results come back
}

// A stage of fewer tasks than the pool's credit splits evenly: dealt one worker's whole
// credit first, 11 of 16 went to the first of two workers and the second idled for half the
// stage.
TEST(SchedulerTest, BalancedDealingSplitsAStageEvenly) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 16}}\n"));
  s.RegisterWorker(Worker("w1", 1, 10), 0);
  s.RegisterWorker(Worker("w2", 1, 10), 0);
  const auto dealt = s.AssignBalanced();
  ASSERT_EQ(dealt.size(), 2u);
  EXPECT_EQ(dealt[0].second.size(), 8u);
  EXPECT_EQ(dealt[1].second.size(), 8u);
  EXPECT_TRUE(s.AssignBalanced().empty());  // every ready task is out
}

TEST(SchedulerTest, BalancedDealingFillsEveryCreditWhenWorkIsPlenty) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 100}}\n"));
  s.RegisterWorker(Worker("w1", 2, 3), 0);
  s.RegisterWorker(Worker("w2", 1, 0), 0);
  size_t total = 0;
  for (const auto& [id, tasks] : s.AssignBalanced()) {
    EXPECT_EQ(tasks.size(), id == "w1" ? 5u : 1u) << id;  // slots + prefetch each
    total += tasks.size();
  }
  EXPECT_EQ(total, 6u);
}

TEST(SchedulerTest, ABigCreditIsDealtInMessagesOfAtMostTheAssignmentCap) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 1000}}\n"));
  s.RegisterWorker(Worker("w1", 2, 298), 0);
  s.RegisterWorker(Worker("w2", 1, 0), 0);
  std::map<std::string, size_t> total;
  size_t messages = 0;
  for (const auto& [id, tasks] : s.AssignBalanced()) {
    EXPECT_LE(tasks.size(), Scheduler::kMaxTasksPerAssignment) << id;
    EXPECT_FALSE(tasks.empty()) << id;
    total[id] += tasks.size();
    ++messages;
  }
  EXPECT_EQ(total["w1"], 300u);  // its whole credit, still
  EXPECT_EQ(total["w2"], 1u);
  EXPECT_EQ(messages, 4u);  // 128 + 128 + 44 for w1, 1 for w2
}

TEST(SchedulerTest, ReleasesStagesInOrderAndReduceAfterMaps) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", kStatsJob));
  s.RegisterWorker(Worker("w1", 10), 0);
  auto imports = s.Assign("w1");
  ASSERT_EQ(imports.size(), 3u);  // stats is blocked behind import
  for (const auto& t : imports) {
    EXPECT_EQ(t.op, "import_csv");
    EXPECT_EQ(t.input_paths.at(0), "/data/digits.csv");
    EXPECT_THAT(t.output_path, HasSubstr("/import/part-0000"));
    EXPECT_EQ(t.params.Get<int64_t>("shards").value(), 3);
    EXPECT_EQ(t.shards, 3u);
  }
  for (const auto& t : imports) EXPECT_EQ(s.OnOutcome("w1", Ok(t)), OutcomeKind::kCommitted);
  auto maps = s.Assign("w1");
  ASSERT_EQ(maps.size(), 3u);  // the reduce waits for the maps
  EXPECT_EQ(maps[1].kind, wire::TaskKind::kMap);
  EXPECT_THAT(maps[1].input_paths.at(0), HasSubstr("/import/part-00001.npz"));
  EXPECT_THAT(maps[1].output_path, HasSubstr("/stats/partial-00001.npz"));
  for (const auto& t : maps) s.OnOutcome("w1", Ok(t));
  auto reduce = s.Assign("w1");
  ASSERT_EQ(reduce.size(), 1u);
  EXPECT_EQ(reduce[0].kind, wire::TaskKind::kReduce);
  EXPECT_EQ(reduce[0].shards, 3u);
  EXPECT_EQ(reduce[0].input_paths.size(), 3u);
  EXPECT_THAT(reduce[0].output_path, HasSubstr("/stats/part-00000.npz"));
  s.OnOutcome("w1", Ok(reduce[0]));
  EXPECT_EQ(s.FindJob("j1")->phase(), JobPhase::kSucceeded);
}

TEST(SchedulerTest, RequeuesTasksWhenWorkerMissesHeartbeats) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 4}}\n"));
  s.RegisterWorker(Worker("w1", 2), 0);
  s.RegisterWorker(Worker("w2", 2), 0);
  auto on_w1 = s.Assign("w1");
  ASSERT_EQ(on_w1.size(), 2u);
  Started(s, "w1", on_w1);
  s.registry().Heard("w2", 6000);
  auto lost = s.ReapSilentWorkers(6000);
  ASSERT_EQ(lost.size(), 2u);
  EXPECT_EQ(lost[0].worker_id, "w1");
  auto on_w2 = s.Assign("w2");
  ASSERT_EQ(on_w2.size(), 2u);
  // The re-queued tasks go next, ahead of the two never started.
  EXPECT_EQ(std::set<uint64_t>({on_w2[0].task_id, on_w2[1].task_id}),
            std::set<uint64_t>({on_w1[0].task_id, on_w1[1].task_id}));
  EXPECT_EQ(on_w2[0].attempt, 1u);
  const wire::JobStatus st = s.Status(*s.FindJob("j1"));
  EXPECT_EQ(st.attempts, 4u);
}

// A worker that cannot see the job's workdir refuses its first task of the job: the task goes
// back uncharged, the job sends that worker nothing more (other jobs still go there), and status
// says why; when no worker is left for it, the node says that too.
TEST(SchedulerTest, AWorkerRefusingAJobsWorkdirGetsNoMoreOfItsTasks) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 4}}\n"));
  wire::RegisterWorker d = Worker("d", 1);
  d.address = "10.0.0.4";
  s.RegisterWorker(d, 0);
  auto first = s.Assign("d");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_FALSE(first[0].workdir.empty());
  wire::TaskOutcome refused = Failed(first[0], "workdir /w not visible on host 10.0.0.4: coupler "
                                               "needs a shared filesystem (no /w/.coupler-job-j1)");
  refused.host_refused = true;
  EXPECT_EQ(s.OnOutcome("d", refused), OutcomeKind::kRefused);
  EXPECT_TRUE(s.Assign("d").empty());
  wire::JobStatus st = s.Status(*s.FindJob("j1"));
  ASSERT_EQ(st.refused_hosts.size(), 1u);
  EXPECT_EQ(st.refused_hosts[0].worker_id, "d");
  EXPECT_EQ(st.refused_hosts[0].address, "10.0.0.4");
  EXPECT_THAT(st.refused_hosts[0].reason, HasSubstr("coupler needs a shared filesystem"));
  EXPECT_EQ(st.attempts, 0u);  // not charged
  EXPECT_THAT(st.nodes[0].reason, HasSubstr("every alive worker refused the job"));

  // Another job still goes to d; the refused job runs on a worker that sees the workdir.
  s.AddJob(MakeJob("j2", "name: m\nnodes:\n  - {id: b, op: noop, params: {tasks: 1}}\n"));
  auto other = s.Assign("d");
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].job_id, "j2");
  s.RegisterWorker(Worker("b", 4), 10);
  auto on_b = s.Assign("b");
  ASSERT_EQ(on_b.size(), 4u);
  EXPECT_EQ(on_b[0].task_id, first[0].task_id);
  EXPECT_EQ(on_b[0].attempt, first[0].attempt);  // the refused attempt was not counted
}

TEST(SchedulerTest, OnlyTheLiveAttemptCommitsALateResultOfAGivenUpAttemptIsDropped) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 1}}\n  - {id: b, op: noop, inputs: [a]}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  s.RegisterWorker(Worker("w2", 1), 0);
  auto t = s.Assign("w1");
  Started(s, "w1", t);
  s.registry().Heard("w2", 5500);
  s.ReapSilentWorkers(6000);  // w1 silent: its task is re-queued...
  s.RegisterWorker(Worker("w2", 1), 6000);
  auto again = s.Assign("w2");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].attempt, 1u);
  // ...and w1, back from a stop, reports the attempt given up on: it no longer counts.
  s.RegisterWorker(Worker("w1", 1), 6100);
  EXPECT_EQ(s.OnOutcome("w1", Ok(t[0])), OutcomeKind::kStale);
  EXPECT_EQ(s.FindJob("j1")->done(), 0u);
  EXPECT_EQ(s.OnOutcome("w2", Ok(again[0])), OutcomeKind::kCommitted);
  EXPECT_EQ(s.OnOutcome("w2", Ok(again[0])), OutcomeKind::kStale);  // a duplicate
  EXPECT_EQ(s.FindJob("j1")->done(), 1u);
}

TEST(SchedulerTest, ALateFailureOfAGivenUpAttemptDoesNotFailItsRetry) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: x, op: noop, retries: 1, params: {tasks: 1}}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  s.RegisterWorker(Worker("w2", 1), 0);
  auto first = s.Assign("w1");
  ASSERT_EQ(first.size(), 1u);
  Started(s, "w1", first);
  s.registry().Heard("w2", 6000);
  EXPECT_EQ(s.ReapSilentWorkers(6000).size(), 1u);  // w1 stopped: declared dead
  auto retry = s.Assign("w2");
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].attempt, 1u);  // the last attempt `retries: 1` allows
  s.RegisterWorker(Worker("w1", 1), 6500);  // back, and its first attempt fails late
  EXPECT_EQ(s.OnOutcome("w1", Failed(first[0], "command exited with status 1")), OutcomeKind::kStale);
  EXPECT_EQ(s.FindJob("j1")->phase(), JobPhase::kRunning);
  EXPECT_EQ(s.OnOutcome("w2", Ok(retry[0])), OutcomeKind::kCommitted);
  EXPECT_EQ(s.FindJob("j1")->phase(), JobPhase::kSucceeded);
}

TEST(SchedulerTest, AWorkerCannotReportTasksItWasNeverSent) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 2}}\n  - {id: b, op: noop, inputs: [a]}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  s.RegisterWorker(Worker("w2", 1), 0);
  auto on_w1 = s.Assign("w1");
  ASSERT_EQ(on_w1.size(), 1u);
  EXPECT_EQ(s.OnOutcome("w2", Ok(on_w1[0])), OutcomeKind::kStale);  // w1 holds it, not w2
  wire::TaskSpec blocked = on_w1[0];
  blocked.task_id = 2;  // node b's task: blocked behind a, sent to no one
  blocked.attempt = 0;
  EXPECT_EQ(s.OnOutcome("w2", Ok(blocked)), OutcomeKind::kStale);
  wire::TaskSpec ready = on_w1[0];
  ready.task_id = 1;  // ready, but not sent yet
  EXPECT_EQ(s.OnOutcome("w1", Ok(ready)), OutcomeKind::kStale);
  const JobState& j = *s.FindJob("j1");
  EXPECT_EQ(j.done(), 0u);
  EXPECT_EQ(j.phase(), JobPhase::kRunning);
  EXPECT_EQ(s.OnOutcome("w1", Ok(on_w1[0])), OutcomeKind::kCommitted);
}

TEST(SchedulerTest, TasksOnlyQueuedOnALostWorkerGoBackUncharged) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: y, op: noop, params: {tasks: 9}, retries: 0}\n"));
  s.RegisterWorker(Worker("w1", 1, 8), 0);
  auto held = s.Assign("w1");
  ASSERT_EQ(held.size(), 9u);
  // Its heartbeat said the first one runs; the 8 behind it were only queued.
  Started(s, "w1", {held[0]});
  auto lost = s.RemoveWorker("w1", 0);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].task_id, held[0].task_id);
  const JobState& j = *s.FindJob("j1");
  EXPECT_EQ(j.phase(), JobPhase::kFailed);  // retries: 0, and that one ran
  EXPECT_EQ(j.total_attempts(), 1u);
  for (size_t i = 1; i < held.size(); ++i) EXPECT_EQ(j.attempts(held[i].task_id), 0u);
}

TEST(SchedulerTest, AWorkerLostBeforeReportingAnythingCostsNoAttempt) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: y, op: noop, params: {tasks: 4}, retries: 0}\n"));
  s.RegisterWorker(Worker("w1", 2, 2), 0);
  ASSERT_EQ(s.Assign("w1").size(), 4u);
  EXPECT_TRUE(s.RemoveWorker("w1", 0).empty());
  const JobState& j = *s.FindJob("j1");
  EXPECT_EQ(j.phase(), JobPhase::kRunning);
  EXPECT_EQ(j.total_attempts(), 0u);
  s.RegisterWorker(Worker("w2", 4), 0);
  for (const auto& t : s.Assign("w2")) {
    EXPECT_EQ(t.attempt, 0u);
    EXPECT_EQ(s.OnOutcome("w2", Ok(t)), OutcomeKind::kCommitted);
  }
  EXPECT_EQ(j.phase(), JobPhase::kSucceeded);
}

TEST(SchedulerTest, ACrashLoopingWorkerUsesNoAttemptsOfTasksItOnlyQueued) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: y, op: noop, params: {tasks: 9}, retries: 3}\n"));
  for (int crash = 0; crash < 6; ++crash) {
    s.RegisterWorker(Worker("w1", 1, 8), crash * 10);
    auto held = s.Assign("w1");
    ASSERT_EQ(held.size(), 9u) << "crash " << crash;
    // The queue keeps its order across the crashes: the same head goes first each time.
    EXPECT_EQ(held[0].task_id, 0u);
    for (size_t i = 1; i < held.size(); ++i) EXPECT_EQ(held[i].attempt, 0u);
    s.RemoveWorker("w1", 0);  // it dies with all 9, before reporting any
  }
  const JobState& j = *s.FindJob("j1");
  EXPECT_EQ(j.phase(), JobPhase::kRunning);
  // The head, which it could have started unreported, is charged at every third such loss
  // (so a task that kills its worker at once still runs out of retries); the 8 behind it never.
  EXPECT_EQ(j.attempts(0), 2u);
  for (uint64_t t = 1; t < 9; ++t) EXPECT_EQ(j.attempts(t), 0u) << "task " << t;
  // A healthy worker finishes the job. (It joins only now: while it is there, the head that
  // failed on w1 would be left for it, see SchedulerRetryTest.)
  s.RegisterWorker(Worker("w2", 1, 0), 0);
  for (int i = 0; i < 20 && !j.finished(); ++i) {
    for (const auto& t : s.Assign("w2")) EXPECT_EQ(s.OnOutcome("w2", Ok(t)), OutcomeKind::kCommitted);
  }
  EXPECT_EQ(j.phase(), JobPhase::kSucceeded);
}

TEST(SchedulerTest, ATaskThatKillsItsWorkerBeforeAnyReportStillRunsOutOfRetries) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: y, op: noop, params: {tasks: 1}, retries: 1}\n"));
  int crashes = 0;
  const JobState& j = *s.FindJob("j1");
  for (; crashes < 20 && !j.finished(); ++crashes) {
    s.RegisterWorker(Worker("w1", 1, 0), crashes);
    ASSERT_EQ(s.Assign("w1").size(), 1u);
    s.RemoveWorker("w1", 0);
  }
  EXPECT_EQ(j.phase(), JobPhase::kFailed);
  EXPECT_EQ(crashes, 6);  // 2 attempts, each charged at the third loss
}

TEST(SchedulerTest, FailsTheJobAfterRetriesWithTheTaskError) {
  Scheduler s(5000);
  s.AddJob(MakeJob("bad", "name: n\nnodes:\n  - {id: x, op: exec, retries: 2, inputs: [/data/shards], params: {command: 'false'}}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  OutcomeKind last = OutcomeKind::kDropped;
  int attempts = 0;
  for (; attempts < 10; ++attempts) {
    auto t = s.Assign("w1");
    if (t.empty()) break;
    last = s.OnOutcome("w1", Failed(t[0], "command exited with status 1: boom"));
  }
  EXPECT_EQ(attempts, 3);  // 1 + retries
  EXPECT_EQ(last, OutcomeKind::kFailed);
  const JobState& j = *s.FindJob("bad");
  EXPECT_EQ(j.phase(), JobPhase::kFailed);
  EXPECT_THAT(j.error(), HasSubstr("node 'x': task 0 (shard 0) failed after 3 attempts: command exited with status 1: boom"));
  EXPECT_EQ(s.Status(j).nodes.at(0).state, job::NodePhase::kFailed);
}

TEST(SchedulerTest, SharesWorkersRoundRobinBetweenJobs) {
  Scheduler s(5000);
  s.AddJob(MakeJob("big", "name: big\nnodes:\n  - {id: a, op: noop, params: {tasks: 1000}}\n"));
  s.AddJob(MakeJob("small", "name: small\nnodes:\n  - {id: a, op: noop, params: {tasks: 2}}\n"));
  s.RegisterWorker(Worker("w1", 4), 0);
  auto batch = s.Assign("w1");
  int small = 0;
  for (const auto& t : batch) small += t.job_id == "small";
  EXPECT_EQ(small, 2);
}

TEST(SchedulerTest, CancelStopsQueuedTasksAndNamesHolders) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 10}}\n"));
  s.RegisterWorker(Worker("w1", 2), 0);
  auto t = s.Assign("w1");
  EXPECT_EQ(s.Cancel("j1"), std::vector<std::string>{"w1"});
  EXPECT_EQ(s.FindJob("j1")->phase(), JobPhase::kCancelled);
  EXPECT_TRUE(s.Assign("w1").empty());
  EXPECT_EQ(s.OnOutcome("w1", Ok(t[0])), OutcomeKind::kStale);
}

TEST(SchedulerTest, RestoredTasksAreNotRunAgain) {
  auto job = MakeJob("j1", kStatsJob);
  job->RestoreDone(0, 1);
  job->RestoreDone(1, 2);
  job->RestoreDone(3, 1);  // a stats map task finished before its stage was released
  Scheduler s(5000);
  s.AddJob(std::move(job));
  s.RegisterWorker(Worker("w1", 10), 0);
  auto first = s.Assign("w1");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].task_id, 2u);
  s.OnOutcome("w1", Ok(first[0]));
  auto second = s.Assign("w1");
  ASSERT_EQ(second.size(), 2u);  // stats maps 4 and 5; 3 was done
  EXPECT_EQ(second[0].task_id, 4u);
}

}  // namespace
}  // namespace coupler::coordinator
