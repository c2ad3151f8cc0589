// A running gang's progress, where an operator looks: coupler train writes a line per step
// into the node's steps.jsonl (as report() of python/coupler_torch.py does for a user's own
// script), and `coupler status`, the job API and /metrics show the step and the loss while
// it runs — the exposition still valid for promtool — and drop the series once it ended.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <regex>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

std::string CurlBody(Cluster& c, const std::string& url) {
  return RunToEnd({FindProgram("curl"), "-sS", "--max-time", "30", "-H",
                   "Authorization: Bearer " + c.ApiToken(), url},
                  c.logs(), 60s)
      .out;
}

TEST(NodeProgressTest, StatusTheApiAndMetricsShowARunningGangsStepAndLoss) {
  for (const char* program : {"curl", "mpirun"}) {
    if (FindProgram(program).empty()) {
      if (std::getenv("CI") != nullptr) FAIL() << program << " is not installed";
      GTEST_SKIP() << program << " is not installed (scripts/install-deps.sh installs it)";
    }
  }
  const fs::path csv = kSourceDir / "data" / "digits.csv";
  ASSERT_TRUE(fs::exists(csv)) << "data/digits.csv is missing: run scripts/fetch-digits.sh";
  Cluster::Options o;
  o.coordinator_args = {"--http", "127.0.0.1:0"};
  Cluster c(o);
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  const std::string url = c.HttpUrl();
  c.StartWorker("w1", 1);
  c.StartWorker("w2", 1);
  ASSERT_TRUE(c.WaitWorkersAlive(2)) << c.Logs();
  // Trained far longer than the test looks (cancelled once seen).
  WriteFile(c.dir() / "train.yaml",
            "name: progress\nworkdir: work\nnodes:\n"
            "  - {id: import, op: import_csv, inputs: [" + csv.string() + "],"
            " params: {shards: 2, label_column: label}}\n"
            "  - id: train\n    op: train\n    inputs: [import]\n    ranks: 2\n"
            "    params: {config: " + (kSourceDir / "examples" / "train-digits.yaml").string() +
            ", epochs: 5000, accumulate: 2}\n");
  const std::string job = c.Submit(c.dir() / "train.yaml");
  ASSERT_FALSE(job.empty()) << c.Logs();

  // `coupler status JOB`: the train node's line carries its step and loss.
  std::smatch m;
  std::string status;
  const bool shown = WaitUntil(
      [&] {
        status = c.Cli({"status", job}).out;
        return std::regex_search(status, m, std::regex(R"(\n  train .* step ([0-9]+)  epoch [0-9]+  loss ([0-9.e+-]+))"));
      },
      120s);
  ASSERT_TRUE(shown) << status << c.Logs();
  EXPECT_GT(std::stoll(m[1]), 0);

  // The job API: nodes[train].progress.
  const bool in_api = WaitUntil(
      [&] {
        rapidjson::Document d;
        const std::string body = CurlBody(c, url + "/api/v1/jobs/" + job);
        if (d.Parse(body.c_str()).HasParseError() || !d.IsObject()) return false;
        for (const auto& n : d["nodes"].GetArray()) {
          if (std::string(n["id"].GetString()) == "train" && n.HasMember("progress")) {
            return n["progress"]["step"].GetInt64() > 0 && n["progress"]["metrics"].HasMember("loss");
          }
        }
        return false;
      },
      60s);
  EXPECT_TRUE(in_api) << CurlBody(c, url + "/api/v1/jobs/" + job);

  // /metrics, through the snapshot the HTTP thread reads (published every few seconds).
  std::string metrics;
  const std::string step_series = "coupler_node_step{job=\"" + job + "\",node=\"train\"} ";
  const std::string loss_series =
      "coupler_node_metric{job=\"" + job + "\",node=\"train\",name=\"loss\"} ";
  const bool in_metrics = WaitUntil(
      [&] {
        metrics = CurlBody(c, url + "/metrics");
        return metrics.find(step_series) != std::string::npos &&
               metrics.find(loss_series) != std::string::npos;
      },
      60s);
  EXPECT_TRUE(in_metrics) << metrics;
  if (!FindProgram("promtool").empty()) {
    WriteFile(c.dir() / "metrics.txt", metrics);
    const CommandResult check = RunToEnd({"/bin/sh", "-c", FindProgram("promtool") +
                                          " check metrics < " + (c.dir() / "metrics.txt").string()},
                                         c.logs(), 60s);
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }

  // Cancelled: the gang's series leave /metrics with it.
  ASSERT_EQ(c.Cli({"cancel", job}).exit_code, 0);
  const bool gone = WaitUntil(
      [&] { return CurlBody(c, url + "/metrics").find(step_series) == std::string::npos; }, 60s);
  EXPECT_TRUE(gone) << CurlBody(c, url + "/metrics");
  const auto done = c.WaitJobFinished(job, 120s);
  ASSERT_TRUE(done.has_value()) << c.Logs();
  EXPECT_EQ(done->state, "cancelled");
}

}  // namespace
}  // namespace coupler::itest
