// Health that tells the truth, watched the way an operator watches it: a full state disk (a
// real tmpfs filled to the last byte) makes /readyz answer 503 with the reason while /healthz
// stays 200; a real Prometheus (Debian's) scraping with the read-only metrics token, not the
// API token, sees coupler_dispatch_stopped 1 and fires the shipped CouplerDispatchStopped rule
// (deploy/prometheus/coupler-alerts.yml); once space returns all of it clears. The metrics
// token opens /metrics and nothing else, and both tokens rotate without a restart.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <regex>
#include <set>

#include "tests/integration/coupler_cluster.h"
#include "tests/integration/prometheus_server.h"
#include "tests/integration/small_disk.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;

struct HttpAnswer {
  int status = 0;
  std::string body;
};

// GET url with curl, a bearer token if given; the status from curl's own report.
HttpAnswer Get(Cluster& c, const std::string& url, const std::string& token = "") {
  std::vector<std::string> argv{FindProgram("curl"), "-sS", "--max-time", "30", "-w", "\n%{http_code}"};
  if (!token.empty()) {
    argv.push_back("-H");
    argv.push_back("Authorization: Bearer " + token);
  }
  argv.push_back(url);
  const std::string out = RunToEnd(argv, c.logs(), 60s).out;
  const size_t nl = out.rfind('\n');
  if (nl == std::string::npos) return {};
  return {std::atoi(out.c_str() + nl + 1), out.substr(0, nl)};
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The first value of an instant query's result, or "" when the result is empty.
std::string QueryValue(Cluster& c, int prom_port, const std::string& promql_escaped) {
  const HttpAnswer a = Get(c, "http://127.0.0.1:" + std::to_string(prom_port) + "/api/v1/query?query=" + promql_escaped);
  rapidjson::Document d;
  if (d.Parse(a.body.c_str()).HasParseError() || !d.IsObject() || !d.HasMember("data")) return "";
  const auto& result = d["data"]["result"];
  if (!result.IsArray() || result.Size() == 0) return "";
  return result[0]["value"][1].GetString();
}

// The state of alert `name` in Prometheus' /api/v1/alerts ("pending", "firing"), or "".
std::string AlertState(Cluster& c, int prom_port, const std::string& name) {
  const HttpAnswer a = Get(c, "http://127.0.0.1:" + std::to_string(prom_port) + "/api/v1/alerts");
  rapidjson::Document d;
  if (d.Parse(a.body.c_str()).HasParseError() || !d.IsObject() || !d.HasMember("data")) return "";
  for (const auto& alert : d["data"]["alerts"].GetArray()) {
    if (alert["labels"]["alertname"].GetString() == name) return alert["state"].GetString();
  }
  return "";
}

void ReplaceToken(const fs::path& path, const std::string& token, fs::perms perms) {
  const fs::path tmp = path.string() + ".new";
  WriteFile(tmp, token + "\n");
  fs::permissions(tmp, perms);
  fs::rename(tmp, path);
}

TEST(ReadinessTest, AFullStateDiskIsNotReadyAndARealPrometheusWithTheMetricsTokenAlerts) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs for the state";
  for (const char* p : {"prometheus", "promtool", "curl"}) {
    if (FindProgram(p).empty()) {
      if (std::getenv("CI") != nullptr) FAIL() << p << " is not installed";
      GTEST_SKIP() << p << " is not installed (scripts/install-deps.sh installs it)";
    }
  }
  Cluster::Options o = Cluster::Options::Timeouts(300, 20'000);
  o.coordinator_args = {"--http", "127.0.0.1:0"};
  Cluster c(o);
  SmallDisk disk(c.state(), "8m");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount tmpfs here";
  ASSERT_TRUE(c.StartCoordinator()) << c.Logs();
  const std::string url = c.HttpUrl();
  ASSERT_FALSE(url.empty()) << c.Logs();
  c.StartWorker("w1", 2);
  ASSERT_TRUE(c.WaitWorkersAlive(1)) << c.Logs();

  // Two credentials: the metrics token reads /metrics and nothing else.
  const fs::path metrics_token_file = c.state() / "metrics-token";
  ASSERT_TRUE(fs::exists(metrics_token_file)) << c.Logs();
  EXPECT_EQ(fs::status(metrics_token_file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  const std::string metrics_token = Trim(ReadFile(metrics_token_file));
  EXPECT_NE(metrics_token, c.ApiToken());
  EXPECT_EQ(Get(c, url + "/metrics", metrics_token).status, 200);
  EXPECT_EQ(Get(c, url + "/api/v1/jobs", metrics_token).status, 401);
  EXPECT_EQ(Get(c, url + "/api/v1/workers", metrics_token).status, 401);
  EXPECT_EQ(Get(c, url + "/metrics").status, 401);
  EXPECT_EQ(Get(c, url + "/api/v1/jobs", c.ApiToken()).status, 200);
  const HttpAnswer ready = Get(c, url + "/readyz");
  EXPECT_EQ(ready.status, 200) << ready.body;

  // Every coupler_ and process_ family the shipped rules and board use is one /metrics
  // declares (a family such as coupler_gpu_idle has samples only where GPU workers are).
  const std::string exposition = Get(c, url + "/metrics", metrics_token).body;
  const std::string shipped = ReadFile(kSourceDir / "deploy" / "prometheus" / "coupler-alerts.yml") +
                              ReadFile(kSourceDir / "deploy" / "grafana" / "coupler.json");
  const std::regex name(R"(\b((coupler|process)_[a-z_]+))");
  std::set<std::string> used;
  for (auto it = std::sregex_iterator(shipped.begin(), shipped.end(), name); it != std::sregex_iterator(); ++it) {
    used.insert((*it)[1].str());
  }
  EXPECT_GE(used.size(), 25u);
  for (std::string series : used) {
    const std::string bucket = "_bucket";
    if (series.size() > bucket.size() && series.ends_with(bucket)) series.resize(series.size() - bucket.size());
    EXPECT_NE(exposition.find("# TYPE " + series + " "), std::string::npos) << series << " is not served";
  }

  // A real Prometheus scraping with the metrics token, the shipped rules loaded.
  PrometheusServer prometheus = StartPrometheus(
      c, url, metrics_token_file, {kSourceDir / "deploy" / "prometheus" / "coupler-alerts.yml"});
  const int prom_port = prometheus.port;
  std::string last;
  ASSERT_TRUE(WaitUntil([&] { return (last = QueryValue(c, prom_port, "coupler_dispatch_stopped")) == "0"; }, 90s, 500ms))
      << "last: " << last << "\n" << c.Logs();
  EXPECT_EQ(QueryValue(c, prom_port, "up%7Bjob%3D%22coupler%22%7D"), "1");

  // The disk fills under a running job.
  const fs::path spec = c.dir() / "long.yaml";
  WriteFile(spec, "name: it-not-ready\nworkdir: work\nnodes:\n"
                  "  - {id: n, op: noop, params: {tasks: 300, sleep_ms: 20}}\n");
  const std::string job = c.Submit(spec);
  ASSERT_FALSE(job.empty()) << c.Logs();
  ASSERT_TRUE(WaitUntil([&] { auto st = c.Job(job); return st && st->done >= 10; }, 60s, 50ms)) << c.Logs();
  disk.Fill();

  HttpAnswer not_ready;
  ASSERT_TRUE(WaitUntil([&] { return (not_ready = Get(c, url + "/readyz")).status == 503; }, 60s, 200ms))
      << not_ready.status << " " << not_ready.body << "\n" << c.Logs();
  EXPECT_THAT(not_ready.body, HasSubstr("dispatch is stopped: the state cannot be written"));
  EXPECT_EQ(Get(c, url + "/healthz").status, 200) << "alive, only not ready";
  ASSERT_TRUE(WaitUntil([&] { return QueryValue(c, prom_port, "coupler_dispatch_stopped") == "1"; }, 60s, 500ms))
      << c.Logs();
  EXPECT_EQ(QueryValue(c, prom_port, "coupler_ready"), "0");
  // The shipped rule fires once its `for:` has passed.
  std::string alert;
  EXPECT_TRUE(WaitUntil([&] { return (alert = AlertState(c, prom_port, "CouplerDispatchStopped")) == "firing"; }, 120s, 1s))
      << "CouplerDispatchStopped: '" << alert << "'\n" << c.Logs();

  // Space returns: ready again, the job finishes, the alert clears.
  disk.Free();
  HttpAnswer again;
  EXPECT_TRUE(WaitUntil([&] { return (again = Get(c, url + "/readyz")).status == 200; }, 60s, 200ms))
      << again.body << "\n" << c.Logs();
  std::optional<JobView> st = c.WaitJobFinished(job, 120s);
  ASSERT_TRUE(st) << c.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_TRUE(WaitUntil([&] { return QueryValue(c, prom_port, "coupler_dispatch_stopped") == "0"; }, 60s, 500ms));
  EXPECT_TRUE(WaitUntil([&] { return AlertState(c, prom_port, "CouplerDispatchStopped").empty(); }, 60s, 1s));

  // The metrics token rotates without a restart: the new one scrapes within seconds, the old
  // one no longer does.
  const std::string new_metrics_token = "00112233445566778899aabbccddeeff";
  ReplaceToken(metrics_token_file, new_metrics_token, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  EXPECT_TRUE(WaitUntil([&] { return Get(c, url + "/metrics", new_metrics_token).status == 200; }, 10s, 200ms));
  EXPECT_EQ(Get(c, url + "/metrics", metrics_token).status, 401);
  // The API token too.
  const std::string old_api_token = c.ApiToken();
  const std::string new_api_token = "ffeeddccbbaa99887766554433221100";
  ReplaceToken(c.ApiTokenFile(), new_api_token, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_TRUE(WaitUntil([&] { return Get(c, url + "/api/v1/jobs", new_api_token).status == 200; }, 10s, 200ms));
  EXPECT_EQ(Get(c, url + "/api/v1/jobs", old_api_token).status, 401);
  EXPECT_THAT(c.coordinator().err(), HasSubstr("the new one is in force"));
  prometheus.process.Kill();
}

}  // namespace
}  // namespace coupler::itest
