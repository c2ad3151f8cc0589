// The README's "A worker pool by hand", pasted as it is: the coordinator, two workers and the
// submit started in the same breath, no keys named. A worker or client that looked for the
// coordinator's keys before it had published them (a fresh state makes its key set first)
// used to exit "no keys for the coordinator"; they wait for the note now. Twenty times in a
// row, each on a fresh state. And --death-timeout: a worker whose coordinator is gone stops.
#include <gtest/gtest.h>

#include <csignal>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(PoolByHandTest, TheReadmeLinesPastedAsTheyAreWorkTwentyTimesInARow) {
  TempDir dir;
  const fs::path spec = dir.path() / "two.yaml";
  WriteFile(spec, "name: by-hand\nnodes:\n  - {id: a, op: noop, params: {tasks: 2}}\n");
  for (int round = 0; round < 20; ++round) {
    const int port = FreePortPair();
    ASSERT_GT(port, 0);
    const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
    const fs::path state = dir.path() / ("state-" + std::to_string(round));
    Process::Options o;
    o.output = dir.path();
    o.deadline = 120s;
    o.name = "coordinator-" + std::to_string(round);
    Process coordinator = Process::Spawn(
        {kCoupler, "coordinator", "--state", state.string(), "--listen", endpoint, "--http", "off"},
        o);
    std::vector<Process> workers;
    for (int w = 0; w < 2; ++w) {
      o.name = "worker-" + std::to_string(round) + "-" + std::to_string(w);
      workers.push_back(
          Process::Spawn({kCoupler, "worker", "--coordinator", endpoint, "--slots", "2"}, o));
    }
    const CommandResult submitted = RunToEnd(
        {kCoupler, "submit", "--wait", spec.string(), "--coordinator", endpoint}, dir.path(), 60s);
    ASSERT_EQ(submitted.exit_code, 0)
        << "round " << round << ": " << submitted.err << "\nworker: " << workers[0].err()
        << "\ncoordinator: " << coordinator.err();
    for (Process& w : workers) {
      EXPECT_TRUE(w.running()) << "round " << round << ": " << w.err();
      w.Signal(SIGTERM);
      EXPECT_EQ(w.WaitExit(30s), 0) << w.err();
    }
    coordinator.Signal(SIGTERM);
    EXPECT_TRUE(coordinator.WaitExit(30s).has_value());
  }
}

TEST(PoolByHandTest, AWorkerWhoseCoordinatorStaysGoneStopsAtItsDeathTimeout) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  Process& worker = cluster.StartWorker("w1", 1, {"--death-timeout", "3s"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  cluster.coordinator().Signal(SIGKILL);
  ASSERT_TRUE(cluster.coordinator().WaitExit(30s).has_value());
  const auto code = worker.WaitExit(60s);
  ASSERT_TRUE(code.has_value()) << "the worker waits for ever\n" << worker.err();
  EXPECT_EQ(*code, 1) << worker.err();
  EXPECT_NE(worker.err().find("(--death-timeout): stopping"), std::string::npos) << worker.err();

  // At start too: no coordinator ever published keys for this endpoint.
  TempDir dir;
  Process::Options o;
  o.output = dir.path();
  o.name = "orphan";
  Process orphan = Process::Spawn({kCoupler, "worker", "--coordinator",
                                   "tcp://127.0.0.1:" + std::to_string(FreePortPair()),
                                   "--death-timeout", "4s"},
                                  o);
  const auto orphan_code = orphan.WaitExit(60s);
  ASSERT_TRUE(orphan_code.has_value()) << orphan.err();
  EXPECT_NE(*orphan_code, 0);
  EXPECT_NE(orphan.err().find("waiting for the coordinator at"), std::string::npos) << orphan.err();
  // Its last word names what was missing: no note at all, or one whose keys are gone.
  EXPECT_NE(orphan.err().find("keys"), orphan.err().rfind("waiting for the coordinator at"))
      << orphan.err();
}

// The pool script started again on a state that holds its graph's job: `submit
// --submission-id` answers with that job, even across a coordinator restart, and submits
// nothing new.
TEST(PoolByHandTest, ASubmitWithASubmissionIdTheStateHoldsIsThatJobNotANewOne) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  const fs::path spec = cluster.dir() / "once.yaml";
  WriteFile(spec, "name: once\nnodes:\n  - {id: a, op: noop, params: {tasks: 3}}\n");
  const CommandResult first = cluster.Cli({"submit", spec.string(), "--submission-id", "pool-abc"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  cluster.coordinator().Signal(SIGTERM);
  ASSERT_TRUE(cluster.coordinator().WaitExit(30s).has_value());
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  const CommandResult again =
      cluster.Cli({"submit", spec.string(), "--wait", "--submission-id", "pool-abc"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find(first.out.substr(0, 8) + " was submitted before with submission id "
                           "'pool-abc': not submitted again"),
            std::string::npos)
      << again.err;
  const CommandResult list = cluster.Cli({"status", "--json"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out.find("j-000002"), std::string::npos) << "submitted twice: " << list.out;
}

}  // namespace
}  // namespace coupler::itest
