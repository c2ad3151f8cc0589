// Big submissions are parsed and planned off the event loop: while two multi-megabyte specs
// are admitted, a healthy worker keeps its heartbeat, is never declared dead, and runs its
// tasks exactly once.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

void WriteBigSpec(const fs::path& path, int nodes) {
  std::ofstream out(path);
  out << "name: big\nworkdir: " << (path.parent_path() / "big-work").string() << "\nnodes:\n";
  char line[96];
  for (int i = 0; i < nodes; ++i) {
    std::snprintf(line, sizeof(line), "  - {id: n%06d, op: noop, params: {tasks: 1}}\n", i);
    out << line;
  }
}

TEST(AdmissionTest, BigSubmissionsDoNotStallHeartbeatsOrDispatch) {
  Cluster cluster(Cluster::Options::Timeouts(300, 1500));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  const fs::path small = cluster.dir() / "small.yaml";
  WriteFile(small, "name: small\nworkdir: work\nnodes:\n"
                   "  - {id: n, op: noop, params: {tasks: 200, sleep_ms: 60}}\n");
  const std::string job = cluster.Submit(small);
  ASSERT_FALSE(job.empty()) << cluster.Logs();

  // Two specs of ~5 MB, each seconds of parsing and planning: far past the heartbeat timeout
  // if the loop did it.
  std::vector<Process> submitters;
  for (int i = 0; i < 2; ++i) {
    const fs::path big = cluster.dir() / ("big" + std::to_string(i) + ".yaml");
    WriteBigSpec(big, 100'000);
    Process::Options po;
    po.deadline = 240s;
    po.output = cluster.logs();
    po.name = "big-submit-" + std::to_string(i);
    submitters.push_back(Process::Spawn(
        {kCoupler, "submit", big.string(), "--coordinator", cluster.endpoint()}, po));
  }
  for (auto& p : submitters) {
    const auto code = p.WaitExit(200s);
    ASSERT_TRUE(code) << cluster.Logs();
    EXPECT_EQ(*code, 0) << p.err();
  }
  const auto st = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_EQ(st->done, 200u);
  EXPECT_EQ(st->attempts, 200u) << "tasks ran twice: the worker was declared dead meanwhile";
  EXPECT_EQ(cluster.coordinator().err().find("from lost worker"), std::string::npos)
      << cluster.coordinator().err();
  EXPECT_EQ(cluster.Workers()["w1"].first, "alive");
}

}  // namespace
}  // namespace coupler::itest
