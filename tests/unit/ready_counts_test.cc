// The ready loose work a job reports (status, the autoscale advice) is kept as tasks change
// state, not counted by walking its queues: every way a task enters or leaves the ready state
// must move the counts, and a retry backing off is ready but queued nowhere yet.
#include <gtest/gtest.h>

#include <utility>

#include "coordinator/job_state.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using testing::MakeJob;
using Counts = std::pair<uint64_t, uint64_t>;

constexpr char kSpec[] = R"(name: p
nodes:
  - {id: cpu, op: noop, params: {tasks: 3}, retries: 3}
  - {id: gpu, op: noop, params: {tasks: 2}, resources: {gpus: 1}, retries: 3}
  - {id: lab, op: noop, params: {tasks: 2}, requires: {zone: b}}
  - {id: gang, op: mpi_exec, ranks: 4, params: {command: run}}
)";

size_t NodeIndex(const JobState& job, const std::string& id) {
  for (size_t p = 0; p < job.plan().nodes.size(); ++p) {
    if (job.plan().nodes[p].id == id) return p;
  }
  ADD_FAILURE() << "no node " << id;
  return 0;
}

TEST(ReadyCountsTest, EveryWayInAndOutOfTheQueuesMovesTheCounts) {
  auto job = MakeJob("j", kSpec);
  const size_t cpu = NodeIndex(*job, "cpu");
  const size_t gpu = NodeIndex(*job, "gpu");
  const size_t lab = NodeIndex(*job, "lab");
  // The labelled node asks for no GPU: its tasks are CPU work. The gang's ranks are not
  // loose work at all.
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(5, 2));
  EXPECT_TRUE(job->node_has_ready(lab));

  Taker plain;  // no GPUs, no labels: takes only the cpu node's tasks
  const std::optional<uint64_t> a = job->TakeReady(plain);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(job->table().Describe(*a).plan_node, cpu);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 2));

  // Failed with a back-off: ready again, but queued nowhere until it ends.
  job->Fail(*a, FailedAttempt{"boom", "w1", true, 1000, ""});
  EXPECT_EQ(job->task_state(*a), TaskState::kReady);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 2));
  job->ReleaseDueRetries(999);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 2));
  job->ReleaseDueRetries(1000);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(5, 2));

  // Taken and done; taken and handed back unstarted.
  const std::optional<uint64_t> b = job->TakeReady(plain);
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(job->Complete(*b));
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 2));
  const std::optional<uint64_t> c = job->TakeReady(plain);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(3, 2));
  job->Requeue(*c);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 2));

  // A GPU task taken from its worker by an operator, and one a restart waits to see adopted.
  Taker gpus;
  gpus.has_gpus = true;
  const std::optional<uint64_t> g = job->TakeReady(gpus);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(job->table().Describe(*g).plan_node, gpu);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 1));
  job->Reissue(*g);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 2));
  EXPECT_EQ(job->AwaitAdoption({*g}), std::vector<uint64_t>{*g});
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 1));
  job->AbandonAdoption(*g);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 2));
  // A worker reports holding a queued attempt: it runs there, its queue entry goes stale.
  ASSERT_TRUE(job->AdoptQueued(*g, job->attempts(*g)));
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 1));

  // The labelled node's tasks, for a worker with its label.
  Labels zone_b{{"zone", "b"}};
  Taker labelled;
  labelled.labels = &zone_b;
  const std::optional<uint64_t> l = job->TakeReady(labelled);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(job->table().Describe(*l).plan_node, lab);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(3, 1));
  EXPECT_TRUE(job->Complete(*l));
  const std::optional<uint64_t> l2 = job->TakeReady(labelled);
  ASSERT_TRUE(l2.has_value());
  EXPECT_FALSE(job->node_has_ready(lab));

  // A failure with no retries left fails the job: nothing is ready any more. `coupler retry`
  // queues every task not done again.
  job->Fail(*l2, FailedAttempt{"bad input", "w1", false, 0, ""});
  EXPECT_EQ(job->phase(), JobPhase::kFailed);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(0, 0));
  job->Retry();
  // Done: one cpu task and one lab task. Ready again: 2 cpu + 1 lab, 2 gpu.
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(3, 2));
  EXPECT_TRUE(job->node_has_ready(lab));
  EXPECT_TRUE(job->node_has_ready(cpu));
}

TEST(ReadyCountsTest, ARetryBackingOffTwiceIsNotSubtractedTwice) {
  auto job = MakeJob("j", kSpec);
  Taker plain;
  const std::optional<uint64_t> a = job->TakeReady(plain);
  ASSERT_TRUE(a.has_value());
  job->Fail(*a, FailedAttempt{"boom", "w1", true, 1000, ""});
  // A worker reports it holds the attempt after all: it runs, fails again, backs off again.
  ASSERT_TRUE(job->AdoptQueued(*a, job->attempts(*a)));
  job->Fail(*a, FailedAttempt{"boom", "w1", true, 2000, ""});
  EXPECT_EQ(job->backing_off(), 2u);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(4, 2));
  job->ReleaseDueRetries(2000);
  EXPECT_EQ(job->ReadyLooseByHardware(), Counts(5, 2));
}

}  // namespace
}  // namespace coupler::coordinator
