// JobState::Retry and MarkReused: what `coupler retry` and reuse ask of a job's bookkeeping.
#include <gtest/gtest.h>

#include "coordinator/job_state.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using testing::MakeJob;

// a (2 tasks) -> b -> c, every node allowing one retry.
const char* kChain = R"(
name: chain
nodes:
  - {id: a, op: noop, params: {tasks: 2}, retries: 1}
  - {id: b, op: noop, inputs: [a], retries: 1}
  - {id: c, op: noop, inputs: [b], retries: 1}
)";

FailedAttempt Failure(std::string error) {
  FailedAttempt f;
  f.error = std::move(error);
  return f;
}

// Runs every ready task to its end: `fail` decides which attempts fail.
template <typename Fail>
void Drain(JobState& job, Fail fail) {
  Taker any;
  while (std::optional<uint64_t> t = job.TakeReady(any)) {
    if (fail(*t)) {
      job.Fail(*t, Failure("boom"));
    } else {
      job.Complete(*t);
    }
  }
}

TEST(JobRetryTest, RunsOnlyTheFailedNodeAndItsDownstreamWithAFreshBudget) {
  auto job = MakeJob("j-1", kChain);
  const uint64_t b0 = job->table().first_task(1);
  Drain(*job, [&](uint64_t t) { return t == b0; });  // b's first task fails both attempts
  ASSERT_EQ(job->phase(), JobPhase::kFailed);
  EXPECT_EQ(job->attempts(b0), 2u);
  EXPECT_EQ(job->node_done(0), 2u);

  job->Retry();
  EXPECT_EQ(job->phase(), JobPhase::kRunning);
  EXPECT_TRUE(job->error().empty());
  EXPECT_TRUE(job->node_error(1).empty());
  // Only b's unfinished task is ready: a stays done, c waits for b.
  Taker any;
  std::optional<uint64_t> next = job->TakeReady(any);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, b0);
  // Attempt numbers go on after the old ones; the budget counts from the retry: one more
  // failure is retried, not fatal.
  EXPECT_EQ(job->MakeSpec(b0).attempt, 2u);
  job->Fail(b0, Failure("still failing"));
  EXPECT_EQ(job->phase(), JobPhase::kRunning);
  Drain(*job, [](uint64_t) { return false; });
  EXPECT_EQ(job->phase(), JobPhase::kSucceeded);
  EXPECT_EQ(job->node_attempts(0), 2u);  // a never ran again
  EXPECT_EQ(job->node_attempts(2), job->table().task_count(2));
}

TEST(JobRetryTest, ACancelledJobRunsItsUnfinishedTasksAgain) {
  auto job = MakeJob("j-2", kChain);
  Taker any;
  const uint64_t first = *job->TakeReady(any);
  job->Complete(first);
  job->Cancel();
  ASSERT_EQ(job->phase(), JobPhase::kCancelled);
  job->Retry();
  Drain(*job, [](uint64_t) { return false; });
  EXPECT_EQ(job->phase(), JobPhase::kSucceeded);
  EXPECT_EQ(job->attempts(first), 1u);
  EXPECT_EQ(job->total_attempts(), job->table().size());
}

TEST(JobRetryTest, ReusedNodesAreDoneWithoutAttemptsAndReleaseTheirReaders) {
  auto job = MakeJob("j-3", kChain);
  job->MarkReused(0, "/w/runs/j-0");
  job->MarkReused(1, "/w/runs/j-0");
  EXPECT_TRUE(job->facts().node_reused(1));
  EXPECT_FALSE(job->facts().node_reused(2));
  EXPECT_EQ(job->facts().reused_from(0), "/w/runs/j-0");
  Taker any;
  std::optional<uint64_t> next = job->TakeReady(any);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(job->table().Describe(*next).plan_node, 2u);  // only c runs
  job->Complete(*next);
  Drain(*job, [](uint64_t) { return false; });
  EXPECT_EQ(job->phase(), JobPhase::kSucceeded);
  EXPECT_EQ(job->total_attempts(), job->table().task_count(2));

  auto all = MakeJob("j-4", kChain);
  for (size_t p = 0; p < 3; ++p) all->MarkReused(p, "/w/runs/j-0");
  EXPECT_EQ(all->phase(), JobPhase::kSucceeded);  // nothing to run at all
  EXPECT_EQ(all->total_attempts(), 0u);
}

}  // namespace
}  // namespace coupler::coordinator
