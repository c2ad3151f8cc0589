// PoolMetrics' counters as the state keeps them: every counter, labelled ones included, comes
// back from Counters() through RestoreCounters(), and a name a later version added is ignored.
#include <gtest/gtest.h>

#include "coordinator/pool_metrics.h"

namespace coupler::coordinator {
namespace {

TEST(PoolMetricsTest, EveryCounterComesBackFromWhatTheStateKeeps) {
  PoolMetrics before;
  before.jobs_submitted = 7;
  before.jobs_finished["succeeded"] = 5;
  before.jobs_finished["cancelled"] = 1;
  before.tasks_done = 1234;
  before.tasks_failed = 9;
  before.gpu_fallback_tasks = 2;
  before.CountRetry(RetryReason::kTimeout);
  before.CountFailure(RetryReason::kInvalidData);
  before.CountFailure(RetryReason::kInvalidData);
  before.task_duration.Observe(1.5);

  std::map<std::string, uint64_t> kept = before.Counters();
  kept["a_counter_of_a_later_version"] = 99;
  PoolMetrics after;
  after.RestoreCounters(kept);
  EXPECT_EQ(after.jobs_submitted, 7u);
  EXPECT_EQ(after.jobs_finished, before.jobs_finished);
  EXPECT_EQ(after.tasks_done, 1234u);
  EXPECT_EQ(after.tasks_failed, 9u);
  EXPECT_EQ(after.gpu_fallback_tasks, 2u);
  EXPECT_EQ(after.retries, before.retries);
  EXPECT_EQ(after.failures, before.failures);
  EXPECT_EQ(after.failures.at("invalid_data"), 2u);
  EXPECT_EQ(after.Counters(), before.Counters());
  // Histograms are not counters: they start again empty.
  EXPECT_EQ(after.task_duration.count(), 0u);
}

}  // namespace
}  // namespace coupler::coordinator
