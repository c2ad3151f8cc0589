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

wire::TaskOutcome Ok(const wire::TaskSpec& s) {
  wire::TaskOutcome o;
  o.job_id = s.job_id;
  o.task_id = s.task_id;
  o.attempt = s.attempt;
  o.ok = true;
  return o;
}

wire::TaskOutcome Failed(const wire::TaskSpec& s, const std::string& error) {
  wire::TaskOutcome o = Ok(s);
  o.ok = false;
  o.error = error;
  return o;
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
    EXPECT_EQ(t.params.at("shards"), "3");
  }
  for (const auto& t : imports) EXPECT_EQ(s.OnOutcome("w1", Ok(t)), OutcomeKind::kCommitted);
  auto maps = s.Assign("w1");
  ASSERT_EQ(maps.size(), 3u);  // the reduce waits for the maps
  EXPECT_EQ(maps[1].params.at("__kind"), "map");
  EXPECT_THAT(maps[1].input_paths.at(0), HasSubstr("/import/part-00001.npy"));
  EXPECT_THAT(maps[1].output_path, HasSubstr("/stats/partial-00001.npy"));
  for (const auto& t : maps) s.OnOutcome("w1", Ok(t));
  auto reduce = s.Assign("w1");
  ASSERT_EQ(reduce.size(), 1u);
  EXPECT_EQ(reduce[0].params.at("__kind"), "reduce");
  EXPECT_EQ(reduce[0].input_paths.size(), 3u);
  EXPECT_THAT(reduce[0].output_path, HasSubstr("/stats/part-00000.npy"));
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

TEST(SchedulerTest, FirstFinishedAttemptWinsAndDuplicatesAreDropped) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: n\nnodes:\n  - {id: a, op: noop, params: {tasks: 1}}\n  - {id: b, op: noop, inputs: [a]}\n"));
  s.RegisterWorker(Worker("w1", 1), 0);
  s.RegisterWorker(Worker("w2", 1), 0);
  auto t = s.Assign("w1");
  s.ReapSilentWorkers(6000);  // both silent: w1's task is re-queued...
  s.RegisterWorker(Worker("w2", 1), 6000);
  auto again = s.Assign("w2");
  ASSERT_EQ(again.size(), 1u);
  // ...but the first worker was only slow: its result arrives first and wins.
  EXPECT_EQ(s.OnOutcome("w1", Ok(t[0])), OutcomeKind::kCommitted);
  EXPECT_EQ(s.OnOutcome("w2", Ok(again[0])), OutcomeKind::kDropped);
  EXPECT_EQ(s.FindJob("j1")->done(), 1u);
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
  EXPECT_EQ(s.Status(j).nodes.at(0).state, "failed");
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
  EXPECT_EQ(s.OnOutcome("w1", Ok(t[0])), OutcomeKind::kDropped);
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
