// Workers that go away mid-job: one killed with SIGKILL (its tasks are re-run elsewhere, every
// output is whole and present once), one drained with SIGTERM (it finishes and commits what it
// holds, nothing is re-run, it exits 0).
#include <gtest/gtest.h>

#include <signal.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(WorkerFailureTest, KilledWorkerTasksAreRerunAndEveryOutputExistsOnce) {
  Cluster cluster(Cluster::Options::Timeouts(300, 1500));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  // One slot and a small prefetch each, so both workers hold tasks when one is killed.
  cluster.StartWorker("w1", 1, {"--prefetch", "2"});
  cluster.StartWorker("w2", 1, {"--prefetch", "2"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  constexpr int kShards = 12;
  WriteSyntheticCsv(cluster.dir() / "in.csv", 600, 4);
  const fs::path spec = cluster.dir() / "crash.yaml";
  // The copy is written first, then the task lingers: a task killed mid-way has already
  // written its temporary output, which must never surface as a second copy of the shard.
  WriteFile(spec, "name: it-worker-crash\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: " + std::to_string(kShards) + "}\n"
                  "  - id: copy\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    params:\n"
                  "      command: \"cp {input} {output} && sleep 0.4\"\n"
                  "      timeout: 60\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // Kill w2 once some copies are done and while it runs one it has reported started: that
  // attempt is charged when w2 is lost (one only sent, or started but not yet reported, goes
  // back uncharged), so the job ends with more attempts than tasks.
  const bool ready_to_kill = WaitUntil(
      [&] {
        auto st = cluster.Job(job);
        if (!st || st->finished()) return false;
        if (st->node("copy").done < 2) return false;
        auto views = cluster.WorkerViews();
        auto w2 = views.find("w2");
        return w2 != views.end() && w2->second.running > 0;
      },
      60s, 20ms);
  ASSERT_TRUE(ready_to_kill) << "w2 never ran a copy task after 2 were done\n" << cluster.Logs();
  cluster.worker("w2").Kill();

  const auto final_status = cluster.WaitJobFinished(job, 90s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << "\n" << cluster.Logs();
  EXPECT_EQ(final_status->done, final_status->total);
  EXPECT_EQ(final_status->total, 2u * kShards);
  // The killed worker's tasks ran again: more attempts than tasks.
  EXPECT_GT(final_status->attempts, final_status->total);
  EXPECT_GT(final_status->node("copy").attempts, static_cast<uint64_t>(kShards));
  EXPECT_EQ(cluster.Workers()["w2"].first, "lost");

  // Each shard exactly once under its final name, nothing else beside it, and each a whole copy.
  std::vector<std::string> expected;
  std::vector<std::string> imported;
  for (int s = 0; s < kShards; ++s) {
    expected.push_back(CommandPartName(s));
    imported.push_back(PartName(s));
  }
  const fs::path work = cluster.dir() / "work" / "latest";
  EXPECT_EQ(ListDir(work / "copy"), expected) << "stray files in the copy node's folder";
  EXPECT_EQ(ListDir(work / "import"), imported);
  for (int s = 0; s < kShards; ++s) {
    const std::string original = ReadFile(work / "import" / PartName(s));
    ASSERT_FALSE(original.empty());
    EXPECT_EQ(ReadFile(work / "copy" / CommandPartName(s)), original) << "shard " << s;
  }
}

TEST(WorkerFailureTest, SigtermDrainsHeldTasksCommitsThemAndExitsZero) {
  Cluster cluster(Cluster::Options::Timeouts(300, 3000));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  constexpr int kShards = 8;
  WriteSyntheticCsv(cluster.dir() / "in.csv", 400, 3);
  const fs::path started = cluster.dir() / "started.log";
  const fs::path spec = cluster.dir() / "drain.yaml";
  // Each task logs its shard when it starts, then takes a second.
  WriteFile(spec, "name: it-drain\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: " + std::to_string(kShards) + "}\n"
                  "  - id: slow\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    params:\n"
                  "      command: \"echo {shard} >> " + started.string() +
                  " && sleep 1 && cp {input} {output}\"\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // w1 is busy: both its slots are running a task.
  ASSERT_TRUE(WaitUntil([&] { return LoggedShards(started).size() >= 2; }, 60s, 10ms))
      << cluster.Logs();
  cluster.worker("w1").Signal(SIGTERM);
  const auto code = cluster.worker("w1").WaitExit(60s);
  ASSERT_TRUE(code) << "w1 did not exit within 60 s of SIGTERM\n" << cluster.Logs();
  EXPECT_EQ(*code, 0) << cluster.Logs();

  // Every task it started was finished and committed; nothing is left running on it.
  const std::vector<int> ran_on_w1 = LoggedShards(started);
  std::optional<JobView> after;
  ASSERT_TRUE(WaitUntil(
      [&] {
        after = cluster.Job(job);
        return after && after->running == 0 && after->prefetched == 0;
      },
      30s, 50ms))
      << cluster.Logs();
  EXPECT_EQ(after->state, "running");
  EXPECT_EQ(after->node("slow").done, ran_on_w1.size());
  EXPECT_LT(ran_on_w1.size(), static_cast<size_t>(kShards)) << "w1 should not have run it all";
  EXPECT_EQ(after->attempts, after->done) << "a task was lost or re-run";
  for (int s : ran_on_w1) {
    EXPECT_TRUE(fs::exists(cluster.dir() / "work" / "latest" / "slow" / CommandPartName(s))) << "shard " << s;
  }

  // A second worker finishes the rest; no task ran twice.
  cluster.StartWorker("w2", 2);
  const auto final_status = cluster.WaitJobFinished(job, 90s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << "\n" << cluster.Logs();
  EXPECT_EQ(final_status->done, 2u * kShards);
  EXPECT_EQ(final_status->attempts, 2u * kShards);
  std::vector<int> all = LoggedShards(started);
  std::sort(all.begin(), all.end());
  std::vector<int> once;
  for (int s = 0; s < kShards; ++s) once.push_back(s);
  EXPECT_EQ(all, once) << "each task should have started exactly once";
}

}  // namespace
}  // namespace coupler::itest
