// One coordinator per state directory, with real processes: a second `coupler coordinator` on a
// held --state exits 1 naming the holder and leaves the first one's jobs alone; once the holder
// is killed, a replacement takes the directory over and finishes what it admitted.
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(StateOwnerTest, ASecondCoordinatorOnAHeldStateExitsNamingTheHolder) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path spec = cluster.dir() / "owned.yaml";
  WriteSyntheticCsv(cluster.dir() / "in.csv", 40, 2);
  WriteFile(spec, "name: it-state-owner\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 2}}\n");
  const std::string job = cluster.Submit(spec);
  ASSERT_FALSE(job.empty()) << cluster.Logs();

  const int port = FreePortPair();
  ASSERT_GT(port, 0);
  const CommandResult second = RunToEnd(
      CoordinatorArgv("tcp://127.0.0.1:" + std::to_string(port), cluster.state(),
                      cluster.dir() / "ready-2", 300, 3000, {}),
      cluster.logs(), 30s);
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  const std::string holder = "pid " + std::to_string(cluster.coordinator().pid()) + " on ";
  EXPECT_NE(second.err.find("is in use by another coordinator (" + holder), std::string::npos)
      << second.err;
  EXPECT_FALSE(fs::exists(cluster.dir() / "ready-2")) << "it never listened";

  // The holder still owns its job: a worker joins and it finishes.
  ASSERT_TRUE(cluster.coordinator().running()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  const auto finished = cluster.WaitJobFinished(job, 60s);
  ASSERT_TRUE(finished.has_value()) << cluster.Logs();
  EXPECT_EQ(finished->state, "succeeded") << cluster.Logs();

  // kill -9 leaves the lock file behind with the dead holder's name; it blocks nothing.
  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  const CommandResult status = cluster.Cli({"status", job});
  EXPECT_EQ(status.exit_code, 0) << status.out << status.err;
  EXPECT_NE(status.out.find("succeeded"), std::string::npos) << status.out;
}

}  // namespace
}  // namespace coupler::itest
