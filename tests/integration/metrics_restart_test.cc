// Counters that survive a restart: the coordinator keeps coupler_*_total in its state, written
// with the rows they count, so after kill -9 and a restart a scrape goes on from where it was
// (Prometheus would read a drop to 0 as a reset, and `increase()` alerts would misfire).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

std::string Scrape(Cluster& c) {
  const std::string token = ReadFile(c.state() / "metrics-token");
  return RunToEnd({FindProgram("curl"), "-sS", "--max-time", "30", "-H",
                   "Authorization: Bearer " + token.substr(0, token.find('\n')), c.HttpUrl() + "/metrics"},
                  c.logs(), 60s)
      .out;
}

// The value of one sample ("name" or "name{labels}"), or -1 when it is not served.
double Sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(MetricsRestartTest, CountersGoOnAfterKillDashNineAndARestart) {
  if (FindProgram("curl").empty()) GTEST_SKIP() << "curl is not installed";
  Cluster::Options o;
  o.coordinator_args = {"--http", "127.0.0.1:0"};
  Cluster c(o);
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  c.StartWorker("w1", 2);
  ASSERT_TRUE(c.WaitWorkersAlive(1)) << c.Logs();
  auto run_job = [&](const std::string& name, int tasks) {
    const fs::path spec = c.dir() / (name + ".yaml");
    WriteFile(spec, "name: " + name + "\nworkdir: work\nnodes:\n  - {id: n, op: noop, params: {tasks: " +
                        std::to_string(tasks) + "}}\n");
    const std::string job = c.Submit(spec);
    ASSERT_FALSE(job.empty()) << c.Logs();
    std::optional<JobView> st = c.WaitJobFinished(job);
    ASSERT_TRUE(st && st->state == "succeeded") << c.Logs();
  };
  run_job("first", 6);
  run_job("second", 4);
  const std::string before = Scrape(c);
  EXPECT_EQ(Sample(before, "coupler_jobs_submitted_total"), 2) << before;
  EXPECT_EQ(Sample(before, "coupler_jobs_finished_total{outcome=\"succeeded\"}"), 2);
  EXPECT_EQ(Sample(before, "coupler_tasks_finished_total{outcome=\"done\"}"), 10);

  c.coordinator().Kill();
  ASSERT_TRUE(c.RestartCoordinator()) << c.Logs();
  ASSERT_TRUE(c.WaitWorkersAlive(1)) << c.Logs();
  const std::string after = Scrape(c);
  EXPECT_EQ(Sample(after, "coupler_jobs_submitted_total"), 2) << after;
  EXPECT_EQ(Sample(after, "coupler_jobs_finished_total{outcome=\"succeeded\"}"), 2);
  EXPECT_EQ(Sample(after, "coupler_tasks_finished_total{outcome=\"done\"}"), 10);

  run_job("third", 3);
  // A scrape may be served the snapshot of a second ago: wait for one taken after the job.
  std::string later;
  EXPECT_TRUE(WaitUntil([&] { return Sample(later = Scrape(c), "coupler_jobs_submitted_total") == 3; }, 10s, 200ms))
      << later;
  EXPECT_EQ(Sample(later, "coupler_tasks_finished_total{outcome=\"done\"}"), 13);
}

}  // namespace
}  // namespace coupler::itest
