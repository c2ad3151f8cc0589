// A big finished job keeps only its summary once the event loop has its end on disk and no
// worker holds a task of it; a small one keeps its node lines; a retried job rebuilt from the
// store takes the compacted one's place.
#include <gtest/gtest.h>

#include <string>

#include "coordinator/scheduler.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using testing::MakeJob;

std::string Wide(int nodes) {
  std::string yaml = "name: wide\nnodes:\n";
  for (int n = 0; n < nodes; ++n) yaml += "  - {id: n" + std::to_string(n) + ", op: noop}\n";
  return yaml;
}

wire::RegisterWorker Worker(const std::string& id, uint32_t slots) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.slots = slots;
  return w;
}

TEST(JobCompactionTest, ABigCancelledJobKeepsItsTotalsOnly) {
  Scheduler s(5000);
  const int nodes = static_cast<int>(Scheduler::kDetailedNodes) + 1;
  s.AddJob(MakeJob("j-1", Wide(nodes)));
  s.Cancel("j-1");
  const wire::JobStatus before = s.Status(*s.FindJob("j-1"));
  ASSERT_EQ(before.nodes.size(), static_cast<size_t>(nodes));
  s.ReleaseFinished("j-1");
  const JobState& job = *s.FindJob("j-1");
  ASSERT_TRUE(job.compacted());
  EXPECT_EQ(job.table().size(), 0u);
  EXPECT_TRUE(job.plan().nodes.empty());
  const wire::JobStatus after = s.Status(job);
  EXPECT_EQ(after.state, job::JobPhase::kCancelled);
  EXPECT_EQ(after.tasks_total, static_cast<uint64_t>(nodes));
  EXPECT_EQ(after.error, before.error);
  EXPECT_TRUE(after.nodes.empty());

  // `coupler retry` rebuilds it: the rebuilt job takes the same place.
  s.AddJob(MakeJob("j-1", Wide(nodes)));
  EXPECT_EQ(s.jobs().size(), 1u);
  EXPECT_FALSE(s.FindJob("j-1")->compacted());
  EXPECT_EQ(s.FindJob("j-1")->table().size(), static_cast<uint64_t>(nodes));
}

TEST(JobCompactionTest, ASmallFinishedJobKeepsItsNodeLines) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j-1", Wide(3)));
  s.Cancel("j-1");
  s.ReleaseFinished("j-1");
  EXPECT_FALSE(s.FindJob("j-1")->compacted());
  EXPECT_EQ(s.Status(*s.FindJob("j-1")).nodes.size(), 3u);
}

TEST(JobCompactionTest, AFailedJobWhoseTasksAreStillOutWaitsForThem) {
  Scheduler s(5000);
  s.RegisterWorker(Worker("w1", 2), 0);
  s.AddJob(MakeJob("j-1", Wide(static_cast<int>(Scheduler::kDetailedNodes) + 1)));
  const std::vector<wire::TaskSpec> sent = s.Assign("w1");
  ASSERT_EQ(sent.size(), 2u);
  JobState& job = *s.FindJob("j-1");
  job.Fail(sent[0].task_id, {"boom", "w1", /*retryable=*/false, 0, {}});
  ASSERT_TRUE(job.finished());
  s.ReleaseFinished("j-1");
  EXPECT_FALSE(job.compacted()) << "compacted while w1 held its tasks";
  for (const wire::TaskSpec& t : sent) {
    EXPECT_EQ(s.OnOutcome("w1", testing::OutcomeOf(t)), OutcomeKind::kDropped);
  }
  s.ReapSilentWorkers(1);  // the periodic sweep
  EXPECT_TRUE(s.FindJob("j-1")->compacted());
  const wire::JobStatus st = s.Status(*s.FindJob("j-1"));
  EXPECT_EQ(st.state, job::JobPhase::kFailed);
  ASSERT_EQ(st.nodes.size(), 1u) << "the failed node stays in the summary";
  EXPECT_EQ(st.nodes[0].id, "n0");
  EXPECT_NE(st.nodes[0].error.find("boom"), std::string::npos) << st.nodes[0].error;
}

}  // namespace
}  // namespace coupler::coordinator
