// A rolling upgrade, with real processes: a coordinator of protocol N runs a pool in which one
// worker still speaks N-1 (`--protocol 16`, byte for byte what the last version-16 build sends:
// WireCompatTest), beside one of N. Both register and take tasks, each is answered in its own
// version, `coupler workers` shows which one speaks the older version, and the job commits every
// task exactly once. The same N-1 worker is then restarted as an N one, as the upgrade's last
// step does.
#include <csignal>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/wire/envelope.h"
#include "tests/integration/coupler_cluster.h"
#include "tests/integration/key_sets.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RollingUpgradeTest, AWorkerOfThePreviousProtocolRunsTasksForACoordinatorOfThisOne) {
  static_assert(wire::kMinSupportedVersion + 1 == wire::kProtocolVersion,
                "the previous version is the one a rolling upgrade meets");
  const std::string previous = std::to_string(wire::kMinSupportedVersion);
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  Process& old_worker = cluster.StartWorker("old", 2, {"--protocol", previous});
  cluster.StartWorker("new", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  const std::string listed = cluster.Cli({"workers"}).out;
  EXPECT_THAT(listed, HasSubstr("speaks protocol " + previous)) << listed;
  const std::string json = cluster.Cli({"workers", "--json"}).out;
  EXPECT_THAT(json, HasSubstr("\"protocol_version\":" + previous));
  EXPECT_THAT(json, HasSubstr("\"protocol_version\":" + std::to_string(wire::kProtocolVersion)));

  const std::string job = cluster.Submit(WriteNoopSpec(cluster, "mixed-pool", 60, 50));
  ASSERT_FALSE(job.empty()) << cluster.Logs();
  std::optional<JobView> st = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_EQ(st->done, 60u);
  EXPECT_EQ(st->attempts, 60u) << "an attempt was lost or run twice";
  const auto views = cluster.WorkerViews();
  ASSERT_EQ(views.count("old"), 1u);
  ASSERT_EQ(views.count("new"), 1u);
  EXPECT_GT(views.at("old").tasks_done, 0u) << "the N-1 worker ran nothing\n" << cluster.Logs();
  EXPECT_GT(views.at("new").tasks_done, 0u);
  EXPECT_TRUE(old_worker.running()) << old_worker.err();
  EXPECT_THAT(old_worker.err(), Not(HasSubstr("unsupported protocol version")));
  EXPECT_THAT(cluster.coordinator().err(), Not(HasSubstr("unsupported protocol version")));

  // The upgrade's last step: the worker restarted at this version, same id.
  old_worker.Signal(SIGTERM);
  ASSERT_TRUE(old_worker.WaitExit(60s).has_value()) << cluster.Logs();
  cluster.StartWorker("old", 2);
  ASSERT_TRUE(WaitUntil([&] { return cluster.Workers()["old"].first == "alive"; }, 30s, 100ms))
      << cluster.Logs();
  EXPECT_THAT(cluster.Cli({"workers"}).out, Not(HasSubstr("speaks protocol")));
}

TEST(RollingUpgradeTest, AVersionOlderThanThePreviousIsRefusedWithBothNamed) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  CommandResult r = RunToEnd({kCoupler, "worker", "--coordinator", cluster.endpoint(), "--protocol",
                              std::to_string(wire::kMinSupportedVersion - 1)},
                             cluster.logs(), 30s);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--protocol"));
}

}  // namespace
}  // namespace coupler::itest
