// The coordinator's HTTP parts that need no server: the token file, the address rules, the
// Prometheus exposition and the page's escaping.
#include <sys/stat.h>

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/http/api_routes.h"
#include "coordinator/http/api_token.h"
#include "coordinator/http/http_server.h"
#include "coordinator/http/metrics_text.h"
#include "coordinator/http/page.h"
#include "tests/unit/store_test_util.h"

namespace coupler::coordinator::http {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using store::testing::TempDir;

TEST(ApiTokenTest, MadeOnceOwnerOnlyAndKeptAcrossStarts) {
  TempDir dir;
  Result<std::string> first = EnsureApiToken(dir.str());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->size(), 32u);
  struct stat st{};
  ASSERT_EQ(::stat(ApiTokenPath(dir.str()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Result<std::string> again = EnsureApiToken(dir.str());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
}

TEST(ApiTokenTest, ATokenOthersCanReadIsRefused) {
  TempDir dir;
  ASSERT_TRUE(EnsureApiToken(dir.str()).ok());
  ASSERT_EQ(::chmod(ApiTokenPath(dir.str()).c_str(), 0644), 0);
  Result<std::string> token = EnsureApiToken(dir.str());
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(token.status().message(), HasSubstr("chmod 600"));
}

TEST(ApiTokenTest, TokensCompareWhole) {
  EXPECT_TRUE(TokensEqual("abcdef0123456789", "abcdef0123456789"));
  EXPECT_FALSE(TokensEqual("abcdef0123456789", "abcdef012345678"));
  EXPECT_FALSE(TokensEqual("abcdef0123456789", "abcdef0123456780"));
  EXPECT_FALSE(TokensEqual("", "abcdef0123456789"));
  EXPECT_FALSE(TokensEqual("abcdef0123456789", ""));
}

TEST(HttpAddressTest, PlaintextBeyondLoopbackNeedsTlsOrInsecure) {
  EXPECT_TRUE(CheckHttpAllowed({"127.0.0.1:7180", "", "", false}).ok());
  EXPECT_TRUE(CheckHttpAllowed({"[::1]:7180", "", "", false}).ok());
  EXPECT_TRUE(CheckHttpAllowed({"localhost:0", "", "", false}).ok());
  Status open = CheckHttpAllowed({"0.0.0.0:7180", "", "", false});
  EXPECT_EQ(open.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(open.message(), HasSubstr("--http-tls"));
  EXPECT_TRUE(CheckHttpAllowed({"0.0.0.0:7180", "", "", true}).ok());
  EXPECT_TRUE(CheckHttpAllowed({"10.1.2.3:7180", "cert.pem", "key.pem", false}).ok());
  EXPECT_FALSE(CheckHttpAllowed({"10.1.2.3:7180", "cert.pem", "", false}).ok());
  for (const char* bad : {"7180", "host:", ":7180", "host:port", "host:70000", "[::1]7180", "a:b:c"}) {
    EXPECT_EQ(ParseHostPort(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(ParseHostPort("[::1]:80")->first, "::1");
  EXPECT_EQ(ParseHostPort("127.0.0.1:0")->second, 0);
}

TEST(HttpStatusTest, FailureKindsMapToTheirCodes) {
  EXPECT_EQ(HttpStatusFor(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusFor(StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFor(StatusCode::kInternal), 500);
}

// A snapshot holds its renderings' once-flags, so it is filled in place, never copied.
void FillSample(Snapshot& s) {
  s.taken_ms = 1'700'000'000'000;
  wire::JobStatus j;
  j.id = "j-000002";
  j.name = "<script>alert(1)</script>";
  j.state = job::JobPhase::kRunning;
  j.tasks_total = 10;
  j.tasks_done = 4;
  j.tasks_running = 2;
  j.tasks_prefetched = 3;
  j.tasks_queued = 1;
  j.submitted_ms = s.taken_ms - 5000;
  wire::NodeStatus loose;
  loose.id = "prep";
  loose.op = "standardize";
  loose.state = job::NodePhase::kRunning;
  loose.tasks_total = 9;
  loose.tasks_done = 4;
  wire::NodeStatus tight;
  tight.id = "train";
  tight.op = "train";
  tight.state = job::NodePhase::kPending;
  tight.tasks_total = 1;
  tight.ranks = 4;
  tight.stage = 1;
  tight.deps = {"prep"};
  j.nodes = {loose, tight};
  s.jobs = {j};
  s.job_counts = {{"running", 1}};
  wire::WorkerStatus w;
  w.id = "w\"1";
  w.state = pool::WorkerState::kAlive;
  w.slots = 4;
  w.running = 2;
  w.gpus = {wire::GpuInfo{0, "NVIDIA H200", 141ull << 30, 0}};
  w.gpu_usage = {wire::GpuUsage{0, 87, 12ull << 30, 141ull << 30}};
  w.gpu_sampling = "nvml";
  s.workers = {w};
  s.stats.recommended_workers = 3;
  s.metrics.task_duration.Observe(0.0002);
  s.metrics.task_duration.Observe(2);
  s.metrics.task_duration.Observe(1e9);
}

TEST(MetricsTextTest, CountsStatesHistogramsAndEscapesLabels) {
  Snapshot sample;
  FillSample(sample);
  const std::string text = RenderMetrics(sample, "1.2.3");
  EXPECT_THAT(text, HasSubstr("coupler_build_info{version=\"1.2.3\",protocol=\""));
  EXPECT_THAT(text, HasSubstr("coupler_jobs{state=\"running\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("coupler_jobs{state=\"failed\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("coupler_tasks{state=\"prefetched\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("coupler_tasks{state=\"running\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("coupler_gangs{state=\"waiting\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("coupler_worker_slots{state=\"busy\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("coupler_worker_slots{state=\"free\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("coupler_recommended_workers 3\n"));
  // Buckets are cumulative; +Inf counts everything, the sum too.
  EXPECT_THAT(text, HasSubstr("coupler_task_duration_seconds_bucket{le=\"0.0005\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("coupler_task_duration_seconds_bucket{le=\"5\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("coupler_task_duration_seconds_bucket{le=\"+Inf\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("coupler_task_duration_seconds_count 3\n"));
  EXPECT_THAT(text, HasSubstr("coupler_gpu_utilization_ratio{worker=\"w\\\"1\",gpu=\"0\"} 0.87\n"));
  EXPECT_THAT(text, HasSubstr("coupler_gpu_memory_used_bytes{worker=\"w\\\"1\",gpu=\"0\"} 12884901888\n"));
  EXPECT_THAT(text, Not(HasSubstr("j-000002")));
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

TEST(PageTest, EscapesWhatUsersNamedAndTellsTightFromLoose) {
  Snapshot sample;
  FillSample(sample);
  const std::string page = RenderPage(sample, "", "1.2.3");
  EXPECT_THAT(page, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(page, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_THAT(page, HasSubstr("data-node=\"prep\" data-kind=\"loose\""));
  EXPECT_THAT(page, HasSubstr("data-node=\"train\" data-kind=\"tight\""));
  EXPECT_THAT(page, HasSubstr("data-ranks=\"4\""));
  EXPECT_THAT(page, HasSubstr("87% busy"));
  EXPECT_THAT(page, HasSubstr("data-worker=\"w&quot;1\""));
  // Everything it loads comes from this server.
  EXPECT_THAT(page, Not(HasSubstr("http://")));
  EXPECT_THAT(page, Not(HasSubstr("https://")));
  EXPECT_THAT(page, HasSubstr("<script src=\"/static/page.js\""));
  EXPECT_THAT(RenderPageBody(sample, "j-404"), HasSubstr("No job j-404."));
}

}  // namespace
}  // namespace coupler::coordinator::http
