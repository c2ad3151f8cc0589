// The coordinator watched the way operators watch it: a real Prometheus (Debian's) scraping
// /metrics with the API token while a job runs, promtool checking the exposition, and a real
// headless Chromium opening the live page during a run of the digits pipeline.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <cstdlib>
#include <sstream>

#include "tests/integration/coupler_cluster.h"
#include "tests/integration/prometheus_server.h"

namespace coupler::itest {
namespace {

// The real part, or why this test cannot run here. CI installs every one of them
// (scripts/install-deps.sh): there a missing one fails the test instead of skipping it.
std::string Missing(const std::vector<std::string>& programs) {
  for (const std::string& p : programs) {
    if (FindProgram(p).empty()) return p + " is not installed (scripts/install-deps.sh installs it)";
  }
  return "";
}

#define REQUIRE_PROGRAMS(...)                                    \
  do {                                                           \
    const std::string why = Missing({__VA_ARGS__});              \
    if (!why.empty()) {                                          \
      if (std::getenv("CI") != nullptr) FAIL() << why;           \
      GTEST_SKIP() << why;                                       \
    }                                                            \
  } while (0)

std::string Curl(Cluster& c, const std::vector<std::string>& args) {
  std::vector<std::string> argv{FindProgram("curl"), "-sS", "--max-time", "30"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunToEnd(argv, c.logs(), 60s).out;
}

TEST(OpsObservedTest, ARealPrometheusScrapesTheJobsFinishedTasks) {
  REQUIRE_PROGRAMS("prometheus", "promtool", "curl");
  Cluster::Options o;
  o.coordinator_args = {"--http", "127.0.0.1:0"};
  Cluster c(o);
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  const std::string url = c.HttpUrl();
  ASSERT_FALSE(url.empty()) << c.Logs();
  c.StartWorker("w1", 2);
  ASSERT_TRUE(c.WaitWorkersAlive(1)) << c.Logs();

  PrometheusServer prometheus = StartPrometheus(c, url, c.ApiTokenFile());
  const int prom_port = prometheus.port;

  constexpr int kShards = 12;
  WriteSyntheticCsv(c.dir() / "in.csv", 600, 3);
  WriteFile(c.dir() / "job.yaml",
            "name: scraped\nworkdir: work\nnodes:\n  - id: import\n    op: import_csv\n"
            "    inputs: [in.csv]\n    params: {shards: " + std::to_string(kShards) + "}\n"
            "  - id: run\n    op: exec\n    inputs: [import]\n"
            "    params: {command: \"sleep 0.3 && cp {input} {output}\"}\n");
  const std::string job = c.Submit(c.dir() / "job.yaml");
  ASSERT_FALSE(job.empty()) << c.Logs();
  std::optional<JobView> done = c.WaitJobFinished(job);
  ASSERT_TRUE(done && done->state == "succeeded") << c.Logs();

  // Prometheus' own HTTP API: the tasks it saw finish, import's and run's alike.
  const std::string query = "http://127.0.0.1:" + std::to_string(prom_port) +
                            "/api/v1/query?query=coupler_tasks_finished_total%7Boutcome%3D%22done%22%7D";
  std::string last;
  const bool seen = WaitUntil(
      [&] {
        last = Curl(c, {query});
        rapidjson::Document d;
        if (d.Parse(last.c_str()).HasParseError() || !d.IsObject() || !d.HasMember("data")) return false;
        const auto& result = d["data"]["result"];
        if (!result.IsArray() || result.Size() != 1) return false;
        return std::string(result[0]["value"][1].GetString()) == std::to_string(done->total);
      },
      90s, 500ms);
  EXPECT_TRUE(seen) << "last answer: " << last << "\n" << c.Logs();
  const std::string up = Curl(c, {"http://127.0.0.1:" + std::to_string(prom_port) +
                                  "/api/v1/query?query=up%7Bjob%3D%22coupler%22%7D"});
  EXPECT_NE(up.find("\"1\"]"), std::string::npos) << up;

  // The exposition as promtool reads it: no problem reported.
  const fs::path scraped = c.dir() / "metrics.txt";
  WriteFile(scraped, Curl(c, {"-H", "Authorization: Bearer " + c.ApiToken(), url + "/metrics"}));
  CommandResult check = RunToEnd({"/bin/sh", "-c", "promtool check metrics < " + scraped.string()}, c.logs(), 60s);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out + check.err, "") << ReadFile(scraped);
  const std::string text = ReadFile(scraped);
  for (const char* family :
       {"coupler_build_info", "coupler_jobs{state=\"succeeded\"} 1", "coupler_jobs_submitted_total 1",
        "coupler_jobs_finished_total{outcome=\"succeeded\"} 1", "coupler_tasks{state=\"running\"}",
        "coupler_task_duration_seconds_bucket", "coupler_task_queue_wait_seconds_count",
        "coupler_task_retries_total{reason=\"failed\"} 0", "coupler_workers{state=\"alive\"} 1",
        "coupler_worker_slots{state=\"free\"} 2", "coupler_workers_lost_total 0", "coupler_gangs{",
        "coupler_gang_wait_seconds", "coupler_queued{class=\"cpu\"} 0", "coupler_recommended_workers",
        "coupler_messages_dropped_total", "coupler_handshakes_refused_total",
        "coupler_gpu_fallback_tasks_total 0", "coupler_gpu_utilization_ratio",
        "coupler_gpu_memory_used_bytes"}) {
    EXPECT_NE(text.find(family), std::string::npos) << family << " missing from\n" << text;
  }
  EXPECT_EQ(text.find(job), std::string::npos) << "no job ids as labels";
  prometheus.process.Kill();
}

TEST(OpsObservedTest, HeadlessChromiumSeesTheDigitsPipelineRunOnTheLivePage) {
  REQUIRE_PROGRAMS("chromium", "chromedriver", "python3");
  const fs::path csv = kSourceDir / "data" / "digits.csv";
  ASSERT_TRUE(fs::exists(csv)) << csv << " is missing: run scripts/fetch-digits.sh";
  Cluster::Options o;
  o.coordinator_args = {"--http", "127.0.0.1:0"};
  Cluster c(o);
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  const std::string url = c.HttpUrl();
  ASSERT_FALSE(url.empty()) << c.Logs();
  c.StartWorker("w1", 2);
  c.StartWorker("w2", 2);
  ASSERT_TRUE(c.WaitWorkersAlive(2)) << c.Logs();

  // The example pipeline as shipped, its workdir in the test's folder.
  const fs::path examples = kSourceDir / "examples";
  std::string spec = ReadFile(examples / "digits-pipeline.yaml");
  const std::string workdir_line = "workdir: ../coupler-work/digits-pipeline";
  ASSERT_NE(spec.find(workdir_line), std::string::npos);
  spec.replace(spec.find(workdir_line), workdir_line.size(), "workdir: " + (c.dir() / "work").string());
  const std::string data = "../data/digits.csv";
  spec.replace(spec.find(data), data.size(), csv.string());
  const std::string config = "config: train-digits.yaml";
  spec.replace(spec.find(config), config.size(), "config: " + (examples / "train-digits.yaml").string());
  // Trained long enough for the page to load and refresh (every 2 s) while the job runs: as
  // shipped (30 epochs) the whole pipeline takes under a second, done before the page is up.
  const std::string precision = "      precision: bf16\n";
  ASSERT_NE(spec.find(precision), std::string::npos);
  spec.replace(spec.find(precision), precision.size(), precision + "      epochs: 900\n");
  WriteFile(c.dir() / "digits.yaml", spec);
  const std::string job = c.Submit(c.dir() / "digits.yaml");
  ASSERT_FALSE(job.empty()) << c.Logs();

  const fs::path shot = fs::path(COUPLER_BINARY).parent_path().parent_path() / "ops-page.png";
  CommandResult r = RunToEnd({FindProgram("python3"), (kSourceDir / "tests/ops/page_check.py").string(), "--url",
                              url, "--token-file", c.ApiTokenFile().string(), "--job", job,
                              "--screenshot", shot.string(), "--timeout", "200"},
                             c.logs(), 260s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << c.Logs();
  std::vector<rapidjson::Document> looks;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    rapidjson::Document d;
    if (!d.Parse(line.c_str()).HasParseError() && d.IsObject()) looks.push_back(std::move(d));
  }
  ASSERT_FALSE(looks.empty()) << r.out;
  const rapidjson::Document& last = looks.back();
  ASSERT_TRUE(last.HasMember("final")) << r.out;

  // The token left the address bar for a cookie.
  EXPECT_EQ(std::string(last["url"].GetString()).find("token="), std::string::npos);
  // The page refreshed itself (it was loaded once) and saw the job while it ran.
  EXPECT_GE(last["refreshes"].GetInt(), 1);
  bool saw_running = false;
  bool saw_partial_progress = false;
  for (const auto& look : looks) {
    for (const auto& j : look["jobs"].GetArray()) {
      if (std::string(j["id"].GetString()) != job) continue;
      saw_running |= std::string(j["state"].GetString()) == "running";
      saw_partial_progress |= j["done"].GetInt() > 0 && j["done"].GetInt() < j["total"].GetInt();
    }
  }
  EXPECT_TRUE(saw_running) << r.out;
  EXPECT_TRUE(saw_partial_progress) << r.out;
  // At the end: the job's row full, and the graph's nodes, loose and tight told apart.
  const auto& row = last["jobs"][0];
  EXPECT_EQ(std::string(row["id"].GetString()), job);
  EXPECT_EQ(std::string(row["state"].GetString()), "succeeded") << c.Logs();
  EXPECT_EQ(row["done"].GetInt(), row["total"].GetInt());
  EXPECT_EQ(std::string(last["graph_job"].GetString()), job);
  std::map<std::string, std::string> kinds;
  for (const auto& n : last["nodes"].GetArray()) {
    kinds[n["id"].GetString()] = n["kind"].GetString();
    EXPECT_EQ(std::string(n["state"].GetString()), "done") << n["id"].GetString();
    EXPECT_EQ(n["done"].GetInt(), n["total"].GetInt()) << n["id"].GetString();
    if (std::string(n["kind"].GetString()) == "tight") {
      EXPECT_EQ(n["ranks"].GetInt(), 2);
      EXPECT_NE(std::string(n["hosts"].GetString()).find("127.0.0.1"), std::string::npos);
    }
  }
  EXPECT_EQ(kinds["import"], "loose");
  EXPECT_EQ(kinds["standardize"], "loose");
  EXPECT_EQ(kinds["train"], "tight");
  EXPECT_EQ(kinds["evaluate"], "loose");
  EXPECT_EQ(last["workers"].Size(), 2u);
  EXPECT_TRUE(fs::exists(shot) && fs::file_size(shot) > 10'000) << shot;
}

}  // namespace
}  // namespace coupler::itest
