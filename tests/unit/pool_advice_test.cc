// The rule behind `recommended_workers` in `coupler status --json`.
#include "coordinator/placement/pool_advice.h"

#include <gtest/gtest.h>

namespace coupler::coordinator {
namespace {

TEST(PoolAdviceTest, EnoughWorkersForQueuedAndRunningWorkAtTheCurrentSlotsPerWorker) {
  // 2 workers of 4 slots, all 8 busy, 10 CPU tasks and a gang of 4 ranks queued: 22 slots.
  EXPECT_EQ(RecommendWorkers({10, 0, 4}, 8, 2, 8), 6u);
  // GPU tasks count like any other slot.
  EXPECT_EQ(RecommendWorkers({0, 3, 0}, 0, 1, 4), 1u);
}

TEST(PoolAdviceTest, NeverBelowTheAliveCountWhileWorkIsQueued) {
  EXPECT_EQ(RecommendWorkers({1, 0, 0}, 0, 5, 20), 5u);
}

TEST(PoolAdviceTest, IdlePoolMayShrinkToTheWorkersItsRunningWorkFills) {
  EXPECT_EQ(RecommendWorkers({}, 0, 3, 12), 0u);
  EXPECT_EQ(RecommendWorkers({}, 5, 3, 12), 2u);
}

TEST(PoolAdviceTest, NoWorkerAliveAssumesOneSlotEachAndTheCapHolds) {
  EXPECT_EQ(RecommendWorkers({7, 0, 0}, 0, 0, 0), 7u);
  EXPECT_EQ(RecommendWorkers({1'000'000, 0, 0}, 0, 0, 0), kMaxRecommendedWorkers);
  EXPECT_EQ(RecommendWorkers({1'000'000, 0, 0}, 0, 300, 300), 300u);  // the alive count wins
  EXPECT_EQ(RecommendWorkers({50, 0, 0}, 0, 0, 0, 10), 10u);
}

// Tasks waiting in a worker's queue are backlog, though the coordinator queues none: one worker
// of 2 slots running 2 and holding 10 more needs 6 workers' slots.
TEST(PoolAdviceTest, PrefetchedTasksAreWorkWaitingForSlots) {
  QueueDepth q;
  q.prefetched_tasks = 10;
  EXPECT_EQ(q.total(), 10u);
  EXPECT_EQ(RecommendWorkers(q, 2, 1, 2), 6u);
  EXPECT_EQ(RecommendWorkers({}, 2, 1, 2), 1u) << "without the backlog, the one worker is enough";
}

}  // namespace
}  // namespace coupler::coordinator
