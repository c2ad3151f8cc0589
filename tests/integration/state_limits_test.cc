// The coordinator's state and memory at their limits, with real processes: a state whose WAL
// was deleted after a crash is refused (it would start knowing less than it reported), unless
// the operator says to accept the loss; and the memory big specs took comes back once they
// are cancelled.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <signal.h>
#include <sqlite3.h>

#include "client/client.h"
#include "coordinator/store/sqlite_db.h"
#include "runtime/net/endpoint.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;

// The job ids `coupler status` lists (any state).
std::vector<std::string> JobIds(Cluster& cluster) {
  CommandResult r = cluster.Cli({"status", "--json"});
  std::vector<std::string> ids;
  rapidjson::Document doc;
  doc.Parse(r.out.c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("jobs") || !doc["jobs"].IsArray()) {
    return ids;
  }
  for (const auto& j : doc["jobs"].GetArray()) ids.push_back(Str(j, "id"));
  std::sort(ids.begin(), ids.end());
  return ids;
}

TEST(StateLimitsTest, ADeletedWalIsRefusedAndTheFlagStartsWithAWarning) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path spec = cluster.dir() / "ten.yaml";
  WriteFile(spec, "name: it-ten\nworkdir: work\nnodes:\n  - {id: n, op: noop, params: {tasks: 10}}\n");
  auto run_job = [&] {
    const std::string id = cluster.Submit(spec);
    EXPECT_FALSE(id.empty()) << cluster.Logs();
    std::optional<JobView> st = cluster.WaitJobFinished(id, 120s);
    EXPECT_TRUE(st && st->state == "succeeded" && st->done == 10u) << cluster.Logs();
    return id;
  };
  std::vector<std::string> first;
  for (int i = 0; i < 4; ++i) first.push_back(run_job());
  std::sort(first.begin(), first.end());

  // A crash with the WAL intact loses nothing.
  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  EXPECT_EQ(JobIds(cluster), first);

  // The fifth job's commits are in the WAL only when the coordinator is killed.
  const std::string fifth = run_job();
  const fs::path wal = cluster.state() / "coupler.db-wal";
  cluster.coordinator().Kill();
  ASSERT_TRUE(fs::exists(wal));
  ASSERT_GT(fs::file_size(wal), 0u);
  fs::remove(wal);

  // Refused, with one line naming the files, what was lost and what to do.
  EXPECT_FALSE(cluster.RestartCoordinator()) << "started on a state that lost its WAL";
  const std::optional<int> code = cluster.coordinator().WaitExit(30s);
  ASSERT_TRUE(code);
  EXPECT_NE(*code, 0);
  const std::string err = cluster.coordinator().err();
  EXPECT_THAT(err, HasSubstr("coupler.db-wal) has lost commits: generation "));
  EXPECT_THAT(err, HasSubstr("recorded in " + (cluster.state() / "coupler.state").string()));
  EXPECT_THAT(err, HasSubstr(" found ("));
  EXPECT_THAT(err, HasSubstr("Restore the state directory from a backup"));
  EXPECT_THAT(err, HasSubstr("--accept-state-loss"));

  // The operator accepts the loss: it starts, says so, and knows what the database held.
  const fs::path ready = cluster.dir() / "ready-accept";
  Process::Options o;
  o.deadline = 120s;
  o.output = cluster.logs();
  o.name = "coordinator-accepting";
  Process accepting = Process::Spawn(
      CoordinatorArgv(cluster.endpoint(), cluster.state(), ready, 300, 3000,
                      {"--accept-state-loss"}),
      o);
  ASSERT_TRUE(WaitUntil(
      [&] { return ReadFile(ready).find("clients=") != std::string::npos || !accepting.running(); },
      60s, 20ms));
  ASSERT_TRUE(accepting.running()) << cluster.Logs();
  EXPECT_THAT(accepting.err(), HasSubstr("has lost commits"));
  EXPECT_THAT(accepting.err(), HasSubstr("starting anyway"));
  EXPECT_EQ(JobIds(cluster), first) << "the fifth job's commits were only in the deleted WAL";
  accepting.Kill();

  // Once accepted, the state is what it holds: a plain restart starts without the flag.
  EXPECT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  EXPECT_EQ(JobIds(cluster), first);
  (void)fifth;
}

// The coordinator's resident memory (VmRSS), in KiB; 0 if it cannot be read.
uint64_t RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6));
  }
  return 0;
}

size_t CountCancelledEvents(const fs::path& events) {
  std::istringstream in(ReadFile(events));
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    n += line.find("\"job_finished\"") != std::string::npos &&
         line.find("\"cancelled\"") != std::string::npos;
  }
  return n;
}

TEST(StateLimitsTest, MemoryReturnsAfterBigSpecsAreCancelled) {
  // No workers: the jobs stay queued until cancelled.
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  auto client = client::Client::Connect(net::ClientEndpointFor(cluster.endpoint()), 120s);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const pid_t pid = cluster.coordinator().pid();

  // Idle, after one small job: the admission thread and its first allocations exist.
  const fs::path small = cluster.dir() / "small.yaml";
  WriteFile(small, "name: small\nworkdir: work\nnodes:\n  - {id: a, op: noop}\n");
  Result<std::string> warm = (*client)->Submit(small.string());
  ASSERT_TRUE(warm.ok()) << warm.status().ToString();
  ASSERT_TRUE((*client)->Cancel(*warm).ok());
  ASSERT_TRUE(WaitUntil([&] { return CountCancelledEvents(cluster.state() / "events.jsonl") == 1; },
                        60s, 50ms))
      << cluster.Logs();
  const uint64_t idle = RssKib(pid);
  ASSERT_GT(idle, 0u);

  // Two specs just under the 16 MiB cap (a long description), two of 200,000 nodes: both are
  // admitted (there is no node cap; 200,000 nodes stay under the 4,000,000-value cap).
  std::vector<fs::path> specs;
  for (int i = 0; i < 2; ++i) {
    const fs::path big = cluster.dir() / ("big-" + std::to_string(i) + ".yaml");
    std::ofstream out(big);
    out << "name: big-" << i << "\nworkdir: work\ndescription: \""
        << std::string((16u << 20) - 4096, static_cast<char>('a' + i))
        << "\"\nnodes:\n  - {id: a, op: noop}\n";
    specs.push_back(big);
  }
  for (int i = 0; i < 2; ++i) {
    const fs::path wide = cluster.dir() / ("wide-" + std::to_string(i) + ".yaml");
    std::ofstream out(wide);
    out << "name: wide-" << i << "\nworkdir: work\nnodes:\n";
    for (int n = 0; n < 200'000; ++n) out << "  - {id: n" << n << ", op: noop}\n";
    specs.push_back(wide);
  }
  std::vector<std::string> ids;
  for (const fs::path& spec : specs) {
    Result<std::string> id = (*client)->Submit(spec.string());
    ASSERT_TRUE(id.ok()) << spec << ": " << id.status().ToString().substr(0, 500);
    ids.push_back(*id);
  }
  const uint64_t loaded = RssKib(pid);
  for (const std::string& id : ids) {
    Result<std::string> cancelled = (*client)->Cancel(id);
    ASSERT_TRUE(cancelled.ok()) << id << ": " << cancelled.status().ToString();
  }
  ASSERT_TRUE(WaitUntil(
      [&] { return CountCancelledEvents(cluster.state() / "events.jsonl") == 1 + ids.size(); },
      120s, 100ms))
      << cluster.Logs();

  uint64_t rss = RssKib(pid);
  WaitUntil([&] { rss = RssKib(pid); return rss * 2 <= idle * 3; }, 60s, 200ms);
  EXPECT_LE(rss * 2, idle * 3) << "idle " << idle << " KiB, " << loaded
                               << " KiB with the big specs, still " << rss
                               << " KiB after they were cancelled";
  ASSERT_TRUE(cluster.coordinator().running()) << cluster.Logs();
  // Cancelled jobs are still known as such.
  Result<wire::StatusReply> st = (*client)->Jobs(job::JobPhase::kCancelled, 0);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_EQ(st->jobs.size(), 1 + ids.size());
}

// A cancelled job too big to keep in full shows its totals, and `coupler retry` rebuilds it
// from the store: it runs again with every node.
TEST(StateLimitsTest, ACompactedJobShowsItsTotalsAndCanBeRetried) {
  Cluster cluster;  // no workers: the job stays queued until cancelled
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  const fs::path spec = cluster.dir() / "wide.yaml";
  {
    std::ofstream out(spec);
    out << "name: wide\nworkdir: work\nnodes:\n";
    for (int n = 0; n < 1500; ++n) out << "  - {id: n" << n << ", op: noop}\n";
  }
  const std::string id = cluster.Submit(spec);
  ASSERT_FALSE(id.empty()) << cluster.Logs();
  CommandResult cancelled = cluster.Cli({"cancel", id});
  ASSERT_EQ(cancelled.exit_code, 0) << cancelled.err;
  std::optional<JobView> st = cluster.WaitJobFinished(id, 60s);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "cancelled");
  EXPECT_EQ(st->total, 1500u);
  EXPECT_TRUE(WaitUntil([&] { st = cluster.Job(id); return st && st->nodes.empty(); }, 60s, 100ms))
      << "still " << (st ? st->nodes.size() : 0) << " node lines";

  CommandResult retried = cluster.Cli({"retry", id});
  ASSERT_EQ(retried.exit_code, 0) << retried.err << cluster.Logs();
  EXPECT_THAT(retried.out, HasSubstr("1500 of 1500 tasks"));
  st = cluster.Job(id);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "running");
  EXPECT_EQ(st->nodes.size(), 1500u);
  EXPECT_EQ(st->queued, 1500u);
  ASSERT_TRUE(cluster.coordinator().running()) << cluster.Logs();
}


// A state holding 100,000 jobs that finished before this start costs the coordinator about what
// an empty one does (they stay in the state, read when asked for), and status lists the newest
// without rendering the rest; one of them is still found by id (CLI and HTTP) and by its
// submission id.
TEST(StateLimitsTest, AHundredThousandFinishedJobsCostNoMemoryAndListNewestFirst) {
  Cluster::Options o;
  o.coordinator_args = {"--http", "127.0.0.1:0"};
  Cluster cluster(o);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  ASSERT_EQ(cluster.Cli({"status"}).exit_code, 0) << cluster.Logs();
  const uint64_t empty = RssKib(cluster.coordinator().pid());
  ASSERT_GT(empty, 0u);
  cluster.coordinator().Signal(SIGTERM);
  ASSERT_TRUE(cluster.coordinator().WaitExit(30s)) << cluster.Logs();

  {
    Result<store::SqliteDb> db =
        store::SqliteDb::Open((cluster.state() / "coupler.db").string(), SQLITE_OPEN_READWRITE);
    ASSERT_TRUE(db.ok()) << db.status().ToString();
    // One statement: every tenth failed, each with a submission id and a run directory.
    const Status inserted = db->Exec(R"sql(
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
      INSERT INTO jobs (id, number, name, spec_text, spec_path, base_dir, priority, state, error,
                        submitted_ms, finished_ms, extra, submitted_by, tasks_total, tasks_done,
                        tasks_failed, attempts, submission_id, run_dir)
      SELECT printf('j-%06d', i), i, 'nightly-' || i,
             'name: nightly
nodes:
  - {id: a, op: noop, params: {tasks: 4}}
',
             '/home/u/nightly.yaml', '/home/u', 0,
             CASE WHEN i % 10 = 0 THEN 'failed' ELSE 'succeeded' END,
             CASE WHEN i % 10 = 0 THEN 'task 3 of node a failed' ELSE '' END,
             1765000000000 + i * 1000, 1765000000500 + i * 1000, x'', 'alice', 4, 4, 0, 4,
             'sub-' || i, '/home/u/work/runs/' || printf('j-%06d', i)
      FROM n)sql");
    ASSERT_TRUE(inserted.ok()) << inserted.ToString();
  }
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();

  CommandResult newest = cluster.Cli({"status", "--limit", "3", "--json"});
  ASSERT_EQ(newest.exit_code, 0) << newest.err;
  rapidjson::Document doc;
  doc.Parse(newest.out.c_str());
  ASSERT_TRUE(doc.IsObject() && doc.HasMember("jobs")) << newest.out;
  std::vector<std::string> ids;
  for (const auto& j : doc["jobs"].GetArray()) ids.push_back(Str(j, "id"));
  EXPECT_EQ(ids, (std::vector<std::string>{"j-100000", "j-099999", "j-099998"}));
  CommandResult failed = cluster.Cli({"status", "--state", "failed", "--limit", "2", "--json"});
  EXPECT_THAT(failed.out, HasSubstr("\"j-100000\""));
  EXPECT_THAT(failed.out, HasSubstr("\"j-099990\""));
  CommandResult one = cluster.Cli({"status", "j-000077", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("nightly-77"));
  EXPECT_THAT(one.out, HasSubstr("/home/u/work/runs/j-000077"));
  EXPECT_NE(cluster.Cli({"status", "j-200000"}).exit_code, 0);

  // An old job over HTTP: not among the snapshot's newest, so asked of the loop.
  const std::string url = cluster.HttpUrl();
  ASSERT_FALSE(url.empty()) << cluster.Logs();
  CommandResult http = RunToEnd({FindProgram("curl"), "-sS", "--max-time", "30", "-H",
                                 "Authorization: Bearer " + cluster.ApiToken(),
                                 url + "/api/v1/jobs/j-000077"},
                                cluster.logs(), 60s);
  EXPECT_THAT(http.out, HasSubstr("\"nightly-77\"")) << http.err;
  CommandResult list = RunToEnd({FindProgram("curl"), "-sS", "--max-time", "30", "-H",
                                 "Authorization: Bearer " + cluster.ApiToken(),
                                 url + "/api/v1/jobs?limit=1"},
                                cluster.logs(), 60s);
  EXPECT_THAT(list.out, HasSubstr("\"total\":100000")) << list.out;

  // A client retrying a submission of an earlier start gets that job back, not a new one.
  CommandResult again = RunToEnd(
      {FindProgram("curl"), "-sS", "--max-time", "30", "-H",
       "Authorization: Bearer " + cluster.ApiToken(), "-H", "Content-Type: application/json",
       "--data-binary", R"({"spec": "name: again\nnodes: []\n", "submission_id": "sub-5"})",
       url + "/api/v1/jobs"},
      cluster.logs(), 60s);
  EXPECT_THAT(again.out, HasSubstr("\"job_id\":\"j-000005\"")) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("\"existing\":true")) << again.out;

  const uint64_t loaded = RssKib(cluster.coordinator().pid());
  EXPECT_LE(loaded, 2 * empty) << "RSS " << loaded << " KiB over 100,000 finished jobs, " << empty
                               << " KiB over none";
}

}  // namespace
}  // namespace coupler::itest
