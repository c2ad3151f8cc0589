// A task that always fails: the job fails after 1 + retries attempts, the command's own stderr
// reaches the user (status and `submit --wait`), and a job running beside it is unaffected.
#include <gtest/gtest.h>

#include <regex>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

TEST(JobFailureTest, FailingTaskFailsItsJobWithTheCommandsErrorAndSparesOthers) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  cluster.StartWorker("w2", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  WriteSyntheticCsv(cluster.dir() / "in.csv", 50, 2);
  const fs::path bad = cluster.dir() / "bad.yaml";
  WriteFile(bad, "name: it-boom\n"
                 "workdir: work-bad\n"
                 "nodes:\n"
                 "  - id: import\n"
                 "    op: import_csv\n"
                 "    inputs: [in.csv]\n"
                 "    params: {shards: 1}\n"
                 "  - id: boom\n"
                 "    op: exec\n"
                 "    inputs: [import]\n"
                 "    retries: 2\n"
                 "    params:\n"
                 "      command: \"echo boom-reason >&2; exit 3\"\n");
  const fs::path good = cluster.dir() / "good.yaml";
  WriteFile(good, "name: it-fine\n"
                  "workdir: work-good\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: 3}\n"
                  "  - id: copy\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    params:\n"
                  "      command: \"sleep 0.2 && cp {input} {output}\"\n");

  // `submit --wait` for the failing job, and the good job submitted while it runs.
  Process::Options o;
  o.deadline = 150s;
  o.output = cluster.logs();
  o.name = "submit-wait";
  Process waiter = Process::Spawn({kCoupler, "submit", bad.string(), "--wait", "--coordinator",
                                   cluster.endpoint()},
                                  o);
  std::string why;
  const std::string good_job = cluster.Submit(good, &why);
  ASSERT_FALSE(good_job.empty()) << why << cluster.Logs();

  const auto code = waiter.WaitExit(120s);
  ASSERT_TRUE(code) << "submit --wait did not return\n" << cluster.Logs();
  EXPECT_EQ(*code, 1) << waiter.err();
  const std::string wait_err = waiter.err();
  EXPECT_NE(wait_err.find("boom-reason"), std::string::npos) << wait_err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(wait_err, m, std::regex("submitted (j-[0-9]+)"))) << wait_err;
  const std::string bad_job = m[1];
  EXPECT_NE(bad_job, good_job);

  const auto st = cluster.Job(bad_job);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "failed");
  EXPECT_NE(st->error.find("boom-reason"), std::string::npos) << st->error;
  EXPECT_NE(st->error.find("3 attempts"), std::string::npos) << st->error;
  EXPECT_EQ(st->failed, 1u);
  EXPECT_EQ(st->node("boom").attempts, 3u) << "1 attempt + 2 retries";
  EXPECT_EQ(st->node("boom").state, "failed");
  EXPECT_NE(st->node("boom").error.find("boom-reason"), std::string::npos);
  EXPECT_EQ(st->node("import").state, "done");
  EXPECT_FALSE(fs::exists(cluster.dir() / "work-bad" / "latest" / "boom" / CommandPartName(0)));

  const auto good_status = cluster.WaitJobFinished(good_job);
  ASSERT_TRUE(good_status) << cluster.Logs();
  EXPECT_EQ(good_status->state, "succeeded") << good_status->error;
  EXPECT_EQ(good_status->done, 6u);
  EXPECT_EQ(good_status->attempts, 6u);
  for (int s = 0; s < 3; ++s) {
    EXPECT_EQ(ReadFile(cluster.dir() / "work-good" / "latest" / "copy" / CommandPartName(s)),
              ReadFile(cluster.dir() / "work-good" / "latest" / "import" / PartName(s)));
  }
}

}  // namespace
}  // namespace coupler::itest
