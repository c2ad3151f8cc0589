// `coupler gang-agent`, mpirun's remote launcher for gangs across hosts, run by hand the way an
// attacker on a worker host would: without a running gang, or with a guessed secret, the
// coordinator refuses and nothing runs anywhere (exit 255, as ssh's failure).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

CommandResult Agent(Cluster& cluster, const std::string& gang, const std::string& token,
                    const std::string& command) {
  return RunToEnd({"/usr/bin/env", "COUPLER_GANG=" + gang, "COUPLER_GANG_TOKEN=" + token,
                   "COUPLER_COORDINATOR=" + cluster.endpoint(),
                   "COUPLER_KEYS=" + (cluster.keys() / "local-worker").string(), kCoupler,
                   "gang-agent", "127.0.0.1", command},
                  cluster.logs(), 60s);
}

TEST(GangAgentTest, ALaunchWithoutARunningGangOrItsSecretIsRefusedAndRunsNothing) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path marker = cluster.dir() / "ran";

  // No such gang.
  CommandResult none = Agent(cluster, "j-000042:0:0", "00000000000000000000000000000000",
                             "touch " + marker.string());
  EXPECT_EQ(none.exit_code, 255) << none.err;
  EXPECT_THAT(none.err, ::testing::HasSubstr("is not a running gang"));

  // A running gang (mpi_exec holding its slots), and a guessed secret.
  const fs::path hold = cluster.dir() / "release";
  const fs::path spec = cluster.dir() / "gang.yaml";
  WriteFile(spec, "name: it-agent\nworkdir: work\nnodes:\n"
                  "  - id: g\n    op: mpi_exec\n    ranks: 2\n    params:\n"
                  "      command: \"while [ ! -e " + hold.string() + " ]; do sleep 0.05; done\"\n"
                  "      timeout: 120\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  ASSERT_TRUE(WaitUntil([&] { auto j = cluster.Job(job); return j && j->running > 0; }, 60s))
      << cluster.Logs();
  CommandResult guessed = Agent(cluster, job + ":0:0", "0123456789abcdef0123456789abcdef",
                                "touch " + marker.string());
  EXPECT_EQ(guessed.exit_code, 255) << guessed.err;
  EXPECT_THAT(guessed.err, ::testing::HasSubstr("refused: not from its leader"));
  // Not a usage the agent knows: nothing to launch.
  CommandResult usage = RunToEnd({kCoupler, "gang-agent"}, cluster.logs(), 30s);
  EXPECT_EQ(usage.exit_code, 255);
  EXPECT_THAT(usage.err, ::testing::HasSubstr("usage: coupler gang-agent HOST COMMAND"));

  WriteFile(hold, "");
  const auto st = cluster.WaitJobFinished(job);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_FALSE(fs::exists(marker)) << "a refused launch ran its command";
  EXPECT_THAT(ReadFile(cluster.logs() / "coordinator-1.err"), ::testing::HasSubstr("refused a gang launch"));
}

}  // namespace
}  // namespace coupler::itest
