// The coordinator's HTTP parts that need no server: the token file, the address rules, the
// Prometheus exposition and the page's escaping.
#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/http/api_routes.h"
#include "coordinator/http/api_token.h"
#include "coordinator/http/http_server.h"
#include "coordinator/http/metrics_text.h"
#include "coordinator/http/page.h"
#include "coordinator/http/process_metrics.h"
#include "coordinator/http/readiness.h"
#include "coordinator/http/token_file.h"
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
  w.gpus = {wire::GpuInfo{0, "NVIDIA H200", 141ull << 30, 0, "GPU-9f2c"}};
  wire::GpuUsage usage{0, 87, 12ull << 30, 141ull << 30};
  usage.readings = wire::kGpuTemperature | wire::kGpuPower | wire::kGpuXid;  // no ECC reading
  usage.temperature_c = 83;
  usage.power_mw = 612'500;
  usage.xid_errors = 1;
  usage.last_xid = 79;
  w.gpu_usage = {usage};
  w.gpu_fences = {wire::GpuFence{0, "XID 79 (GPU has fallen off the bus)", 1700000000000}};
  w.gpu_sampling = "nvml";
  w.host = "gpu-7";
  w.prefetched = 1;
  w.tasks_done = 17;
  w.heard_ms_ago = 1500;
  w.protocol_version = 14;
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
  // GPU series carry dcgm-exporter's label names, so its boards join ours.
  const std::string gpu = "{worker=\"w\\\"1\",gpu=\"0\",UUID=\"GPU-9f2c\",Hostname=\"gpu-7\",modelName=\"NVIDIA H200\"}";
  EXPECT_THAT(text, HasSubstr("coupler_gpu_utilization_ratio" + gpu + " 0.87\n"));
  EXPECT_THAT(text, HasSubstr("coupler_gpu_memory_used_bytes" + gpu + " 12884901888\n"));
  // Health under dcgm-exporter's field names and units; a reading not given is absent, not 0.
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_GPU_TEMP" + gpu + " 83\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_POWER_USAGE" + gpu + " 612.5\n"));
  EXPECT_THAT(text, HasSubstr("DCGM_FI_DEV_XID_ERRORS" + gpu + " 79\n"));
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{")));
  EXPECT_THAT(text, Not(HasSubstr("DCGM_FI_DEV_POWER_MGMT_LIMIT{")));
  EXPECT_THAT(text, HasSubstr("coupler_gpu_fenced" + gpu + " 1\n"));
  // One series per worker, as its row of `coupler workers` shows it.
  EXPECT_THAT(text, HasSubstr("coupler_worker_info{worker=\"w\\\"1\",host=\"gpu-7\",state=\"alive\",protocol=\"14\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("coupler_worker_task_slots{worker=\"w\\\"1\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("coupler_worker_running_tasks{worker=\"w\\\"1\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("coupler_worker_prefetched_tasks{worker=\"w\\\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("coupler_worker_tasks_done_total{worker=\"w\\\"1\"} 17\n"));
  EXPECT_THAT(text, HasSubstr("coupler_worker_heartbeat_age_seconds{worker=\"w\\\"1\"} 1.5\n"));
  EXPECT_THAT(text, HasSubstr("coupler_dispatch_stopped 0\n"));
  EXPECT_THAT(text, HasSubstr("coupler_event_loop_lag_seconds_count 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("j-000002")));
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
}

TEST(MetricsTextTest, AStateThatCannotBeWrittenShowsDispatchStopped) {
  Snapshot sample;
  FillSample(sample);
  sample.stats.store_error = "database or disk is full";
  sample.loop_lag.Observe(0.00003);
  sample.loop_lag.Observe(3);
  const std::string text = RenderMetrics(sample, "1.2.3");
  EXPECT_THAT(text, HasSubstr("coupler_dispatch_stopped 1\n"));
  EXPECT_THAT(text, HasSubstr("coupler_event_loop_lag_seconds_bucket{le=\"0.0001\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("coupler_event_loop_lag_seconds_bucket{le=\"2.5\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("coupler_event_loop_lag_seconds_count 2\n"));
}

TEST(MetricsTextTest, TheProcessSeriesAreThoseOfEveryPrometheusClient) {
  const std::string text = RenderProcessMetrics();
  for (const char* family : {"process_cpu_seconds_total ", "process_resident_memory_bytes ",
                             "process_virtual_memory_bytes ", "process_open_fds ",
                             "process_max_fds ", "process_start_time_seconds ", "process_threads "}) {
    EXPECT_THAT(text, HasSubstr(family));
  }
  const std::optional<ProcessStats> p = ReadProcessStats();
  ASSERT_TRUE(p.has_value());
  EXPECT_GT(p->resident_bytes, 1u << 20);
  EXPECT_GE(p->open_fds, 3u);  // stdin, stdout, stderr at least
  EXPECT_GT(p->max_fds, p->open_fds);
  EXPECT_GE(p->threads, 1u);
  // Started in the last day, not at the epoch or in the future.
  const double now = static_cast<double>(::time(nullptr));
  EXPECT_LE(p->start_time_seconds, now + 1);
  EXPECT_GT(p->start_time_seconds, now - 86400);
}

TEST(ReadinessTest, ReadyOnlyWhileTheLoopAnswersAndTheStateWrites) {
  EXPECT_FALSE(ReadinessOf(nullptr, 1000).ready);
  Snapshot s;
  s.taken_ms = 100'000;
  EXPECT_TRUE(ReadinessOf(&s, 100'500).ready);
  EXPECT_EQ(ReadinessOf(&s, 100'500).reason, "");
  const Readiness late = ReadinessOf(&s, 102'000);
  EXPECT_FALSE(late.ready);
  EXPECT_THAT(late.reason, HasSubstr("event loop lags"));
  s.stats.store_error = "database or disk is full";
  const Readiness full = ReadinessOf(&s, 100'500);
  EXPECT_FALSE(full.ready);
  EXPECT_THAT(full.reason, HasSubstr("dispatch is stopped"));
  EXPECT_THAT(full.reason, HasSubstr("database or disk is full"));
  EXPECT_THAT(RenderReadinessMetric(full), HasSubstr("coupler_ready 0\n"));
  EXPECT_THAT(RenderReadinessMetric({true, ""}), HasSubstr("coupler_ready 1\n"));
}

// Replaces a token file as an operator would: a new file moved over the old.
void ReplaceToken(const std::string& path, const std::string& token, mode_t mode) {
  const std::string tmp = path + ".new";
  {
    std::ofstream out(tmp);
    out << token << "\n";
  }
  ASSERT_EQ(::chmod(tmp.c_str(), mode), 0);
  ASSERT_EQ(::rename(tmp.c_str(), path.c_str()), 0);
}

TEST(TokenFileTest, TheMetricsTokenIsMadeForItsGroupAndRefusedWhenOthersCanReadIt) {
  TempDir dir;
  Result<TokenFile> metrics = TokenFile::Open(MetricsTokenPath(dir.str()), TokenReaders::kOwnerAndGroup);
  ASSERT_TRUE(metrics.ok()) << metrics.status().ToString();
  struct stat st{};
  ASSERT_EQ(::stat(MetricsTokenPath(dir.str()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  const std::string token = metrics->Current();
  EXPECT_EQ(token.size(), 32u);
  EXPECT_TRUE(metrics->Matches(token));
  EXPECT_FALSE(metrics->Matches(""));
  Result<std::string> api = EnsureApiToken(dir.str());
  ASSERT_TRUE(api.ok());
  EXPECT_NE(*api, token) << "two credentials, not one";
  ASSERT_EQ(::chmod(MetricsTokenPath(dir.str()).c_str(), 0644), 0);
  Result<TokenFile> open = TokenFile::Open(MetricsTokenPath(dir.str()), TokenReaders::kOwnerAndGroup);
  ASSERT_FALSE(open.ok());
  EXPECT_THAT(open.status().message(), HasSubstr("chmod 640"));
}

TEST(TokenFileTest, AReplacedTokenIsInForceWithinASecondAndTheOldOneIsNot) {
  TempDir dir;
  const std::string path = ApiTokenPath(dir.str());
  Result<TokenFile> file = TokenFile::Open(path, TokenReaders::kOwner);
  ASSERT_TRUE(file.ok());
  const std::string old_token = file->Current();
  const std::string new_token = "0123456789abcdef0123456789abcdef";
  ReplaceToken(path, new_token, 0600);
  bool rotated = false;
  for (int i = 0; i < 40 && !rotated; ++i) {
    rotated = file->Matches(new_token);
    if (!rotated) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(rotated) << "the new token was not taken within 4 s";
  EXPECT_FALSE(file->Matches(old_token));
  // A replacement others can read is refused, and the old token stays revoked.
  ReplaceToken(path, "fedcba9876543210fedcba9876543210", 0644);
  bool refused = false;
  for (int i = 0; i < 40 && !refused; ++i) {
    refused = file->Current().empty();
    if (!refused) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(refused);
  EXPECT_FALSE(file->Matches(new_token));
  EXPECT_FALSE(file->Matches("fedcba9876543210fedcba9876543210"));
  EXPECT_FALSE(file->Matches(""));
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
