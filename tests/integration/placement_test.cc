// Placement by labels across real processes: a node requiring zone=b waits, with its reason in
// `coupler status --json`, while only a zone=a worker is up, and runs once a zone=b one joins.
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(PlacementTest, NodeWaitsForAWorkerWithItsLabelsThenRuns) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("wa", 2, {"--labels", "zone=a,interconnect=nvlink"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  const fs::path spec = cluster.dir() / "pinned.yaml";
  WriteFile(spec, "name: it-pinned\n"
                  "workdir: work-pinned\n"
                  "nodes:\n"
                  "  - id: free\n"
                  "    op: noop\n"
                  "    params: {tasks: 2}\n"
                  "  - id: pinned\n"
                  "    op: noop\n"
                  "    params: {tasks: 3}\n"
                  "    requires: {zone: b}\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // The unconstrained node runs on the zone=a worker; the pinned one waits and says why.
  std::optional<JobView> last;
  const bool waiting = WaitUntil(
      [&] {
        last = cluster.Job(job);
        return last && last->node("free").state == "done" &&
               last->node("pinned").reason ==
                   "waiting for a worker with zone=b (1 alive worker, none match)";
      },
      60s, 100ms);
  ASSERT_TRUE(waiting) << (last ? last->node("pinned").reason : "no status") << cluster.Logs();
  EXPECT_EQ(last->state, "running");
  EXPECT_EQ(last->node("pinned").done, 0u);
  EXPECT_EQ(last->node("pinned").attempts, 0u);
  // The waiting tasks are what a scaling script sees: 3 CPU tasks, and 2 workers of the
  // current 2 slots each would run them.
  std::optional<CoordinatorView> pool = cluster.Coordinator();
  ASSERT_TRUE(pool) << cluster.Logs();
  EXPECT_EQ(pool->queued_cpu_tasks, 3u);
  EXPECT_EQ(pool->queued_gpu_tasks, 0u);
  EXPECT_EQ(pool->queued_gang_ranks, 0u);
  EXPECT_EQ(pool->recommended_workers, 2u);

  cluster.StartWorker("wb", 1, {"--labels", "zone=b"});
  std::optional<JobView> end = cluster.WaitJobFinished(job);
  ASSERT_TRUE(end) << cluster.Logs();
  EXPECT_EQ(end->state, "succeeded") << end->error << cluster.Logs();
  EXPECT_EQ(end->node("pinned").done, 3u);
  EXPECT_EQ(end->node("pinned").reason, "");
}

}  // namespace
}  // namespace coupler::itest
