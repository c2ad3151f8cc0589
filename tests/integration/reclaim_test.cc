// Queued work moves to idle workers, with real processes: one worker holds 16 one-second tasks
// (1 slot, prefetch 16) when three more join; the coordinator takes back what waits unstarted
// (Reclaim/Reclaimed) and deals it to them. Every task runs exactly once (its command's own
// side effect is counted), none is charged an extra attempt, and the joined workers run some.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(ReclaimTest, QueuedTasksMoveToWorkersThatJoinAndRunOnce) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1, {"--prefetch", "16"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  constexpr int kShards = 16;
  WriteSyntheticCsv(cluster.dir() / "in.csv", 160, 2);
  const fs::path started = cluster.dir() / "started.log";
  const fs::path spec = cluster.dir() / "hoard.yaml";
  WriteFile(spec, "name: it-reclaim\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: " +
                      std::to_string(kShards) + "}}\n"
                  "  - id: run\n    op: exec\n    inputs: [import]\n    params:\n"
                  "      command: \"echo {shard} >> " + started.string() +
                      " && sleep 1 && cp {input} {output}\"\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  // w1 holds the whole stage: 1 running, the rest queued behind it.
  ASSERT_TRUE(WaitUntil(
      [&] {
        const auto workers = cluster.Workers();
        auto w1 = workers.find("w1");
        return w1 != workers.end() && w1->second.second == kShards;
      },
      60s, 20ms))
      << cluster.Logs();
  for (const char* id : {"w2", "w3", "w4"}) cluster.StartWorker(id, 1);
  const auto done = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(done) << cluster.Logs();
  ASSERT_EQ(done->state, "succeeded") << done->error << "\n" << cluster.Logs();

  std::istringstream lines(ReadFile(started));
  std::vector<int> runs;
  for (int s; lines >> s;) runs.push_back(s);
  std::sort(runs.begin(), runs.end());
  std::vector<int> once(kShards);
  for (int s = 0; s < kShards; ++s) once[s] = s;
  EXPECT_EQ(runs, once) << "a task ran twice or never";
  EXPECT_EQ(done->node("run").attempts, static_cast<uint64_t>(kShards)) << "an attempt was charged";
  uint64_t joined = 0;
  for (const auto& [id, w] : cluster.WorkerViews()) {
    if (id != "w1") joined += w.tasks_done;
  }
  EXPECT_GT(joined, 0u) << "no queued task moved to the workers that joined\n" << cluster.Logs();
  EXPECT_NE(cluster.coordinator().err().find("queued task(s) back from worker w1"),
            std::string::npos)
      << cluster.coordinator().err();
}

}  // namespace
}  // namespace coupler::itest
