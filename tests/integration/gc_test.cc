// `coupler gc` on a real state: refused while a coordinator holds it (naming the holder); with
// the coordinator stopped, it removes the run directory of a finished job past the retention
// that no later run needs (its outputs superseded in the reuse catalogue by a newer run of the
// same spec), keeps the newest one (reusable), and the removed job stays listed.
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(GcTest, RemovesASupersededRunKeepsTheReusableOneAndTheJobsStayListed) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  WriteSyntheticCsv(cluster.dir() / "in.csv", 40, 2);
  const fs::path spec = cluster.dir() / "gc.yaml";
  WriteFile(spec, "name: it-gc\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 2}}\n");
  std::vector<std::string> jobs;
  for (int i = 0; i < 2; ++i) {
    std::string why;
    jobs.push_back(cluster.Submit(spec, &why));
    ASSERT_FALSE(jobs.back().empty()) << why << cluster.Logs();
    const auto done = cluster.WaitJobFinished(jobs.back(), 60s);
    ASSERT_TRUE(done && done->state == "succeeded") << cluster.Logs();
  }
  const fs::path first = cluster.dir() / "work" / "runs" / jobs[0];
  const fs::path second = cluster.dir() / "work" / "runs" / jobs[1];
  ASSERT_TRUE(fs::exists(first / "import")) << first;

  const std::vector<std::string> gc = {kCoupler, "gc", "--state", cluster.state().string(),
                                       "--older-than", "0s"};
  const CommandResult held = RunToEnd(gc, cluster.logs(), 30s);
  EXPECT_EQ(held.exit_code, 1) << held.out << held.err;
  EXPECT_NE(held.err.find("pid"), std::string::npos) << "the refusal names the holder: " << held.err;
  EXPECT_TRUE(fs::exists(first / "import"));

  cluster.coordinator().Signal(SIGTERM);
  ASSERT_TRUE(cluster.coordinator().WaitExit(30s)) << cluster.Logs();
  std::vector<std::string> dry = gc;
  dry.push_back("--dry-run");
  const CommandResult looked = RunToEnd(dry, cluster.logs(), 30s);
  ASSERT_EQ(looked.exit_code, 0) << looked.err;
  EXPECT_NE(looked.out.find("would remove " + jobs[0]), std::string::npos) << looked.out;
  EXPECT_TRUE(fs::exists(first / "import")) << "a dry run removed it";

  const CommandResult removed = RunToEnd(gc, cluster.logs(), 30s);
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_NE(removed.out.find("removed " + jobs[0]), std::string::npos) << removed.out;
  EXPECT_NE(removed.out.find("kept " + jobs[1]), std::string::npos) << removed.out;
  EXPECT_NE(removed.out.find("reusable"), std::string::npos) << removed.out;
  EXPECT_FALSE(fs::exists(first));
  EXPECT_TRUE(fs::exists(second / "import"));

  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  const auto listed = cluster.Job(jobs[0]);
  ASSERT_TRUE(listed) << cluster.Logs();
  EXPECT_EQ(listed->state, "succeeded");
}

// `coupler coordinator --gc-older-than`: the running coordinator removes the run directory of a
// finished job past the retention by itself (no stop needed), the job stays listed, and a retry
// of it is refused with the reason instead of sending workers a job they cannot run.
TEST(GcTest, ARunningCoordinatorRemovesRunsPastItsRetentionAndRefusesTheirRetry) {
  Cluster::Options options;
  options.coordinator_args = {"--gc-older-than", "0s", "--gc-every", "1s"};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  WriteSyntheticCsv(cluster.dir() / "in.csv", 40, 2);
  const fs::path spec = cluster.dir() / "fails.yaml";
  // One fused chain that fails: no node of it succeeded, so the reuse catalogue records
  // nothing of the run and nothing keeps it.
  WriteFile(spec, "name: it-gc-live\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], retries: 0,\n"
                  "     params: {shards: 1}}\n"
                  "  - {id: step, op: exec, inputs: [import], retries: 0,\n"
                  "     params: {command: \"exit 3\"}}\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto done = cluster.WaitJobFinished(job, 60s);
  ASSERT_TRUE(done && done->state == "failed") << cluster.Logs();
  const fs::path run = cluster.dir() / "work" / "runs" / job;
  ASSERT_TRUE(WaitUntil([&] { return !fs::exists(run); }, 60s)) << "still there: " << run
                                                                 << cluster.Logs();
  const CommandResult retry = cluster.Cli({"retry", job});
  EXPECT_NE(retry.exit_code, 0) << retry.out;
  EXPECT_NE(retry.err.find("cannot be retried"), std::string::npos) << retry.err;
  EXPECT_NE(retry.err.find("removed"), std::string::npos) << retry.err;
  const auto listed = cluster.Job(job);
  ASSERT_TRUE(listed) << cluster.Logs();
  EXPECT_EQ(listed->state, "failed") << "the job stays listed";
  EXPECT_NE(ReadFile(cluster.logs() / "coordinator-1.err").find("retention: removed job " + job),
            std::string::npos)
      << cluster.Logs();
}

}  // namespace
}  // namespace coupler::itest
