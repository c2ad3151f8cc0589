// Status that tells the truth, as a new user reads it:
//  - a failed job shows nothing running, though its other tasks were still out;
//  - a worker of 2 slots holding 10 prefetched tasks shows 2 running and 10 prefetched (in
//    `workers`, the job and the pool), and the advice counts the prefetched as backlog;
//  - a drained worker shows "drained", a SIGKILLed one "lost";
//  - `status` lists jobs newest first, one line each, filtered by --state and cut by --limit;
//  - `submit --wait` ends with the summary `coupler run` prints;
//  - a coordinator started with its own --clients endpoint is reached with --clients, and the
//    derived endpoint, where nothing listens, is reported within seconds, named.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>

#include "runtime/net/curve_keys.h"
#include "runtime/net/endpoint.h"
#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

fs::path WriteNoopSpec(const fs::path& dir, const std::string& name, int tasks, int sleep_ms) {
  const fs::path spec = dir / (name + ".yaml");
  WriteFile(spec, "name: " + name + "\n"
                  "workdir: work-" + name + "\n"
                  "nodes:\n"
                  "  - {id: n, op: noop, params: {tasks: " + std::to_string(tasks) +
                  ", sleep_ms: " + std::to_string(sleep_ms) + "}}\n");
  return spec;
}

// The ids in `status --json`'s job list, in its order.
std::vector<std::string> ListedIds(const CommandResult& r) {
  std::vector<std::string> ids;
  rapidjson::Document d;
  if (r.exit_code != 0 || d.Parse(r.out.c_str()).HasParseError() || !d.IsObject() ||
      !d.HasMember("jobs") || !d["jobs"].IsArray()) {
    return ids;
  }
  for (const auto& j : d["jobs"].GetArray()) ids.push_back(Str(j, "id"));
  return ids;
}

TEST(StatusTruthTest, AFailedJobShowsNothingRunning) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 4);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  // Shard 0 fails at once; the others are still running when it does.
  WriteSyntheticCsv(cluster.dir() / "in.csv", 40, 2);
  const fs::path started = cluster.dir() / "started.log";
  const fs::path spec = cluster.dir() / "boom.yaml";
  WriteFile(spec, "name: it-boom\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 4}}\n"
                  "  - id: boom\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    retries: 0\n"
                  "    params:\n"
                  "      command: \"echo {shard} >> " + started.string() +
                  "; if [ {shard} = 0 ]; then while [ $(wc -l < " + started.string() +
                  ") -lt 4 ]; do sleep 0.1; done; exit 3; fi; sleep 60\"\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  const auto final_status = cluster.WaitJobFinished(job, 90s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "failed") << cluster.Logs();
  EXPECT_EQ(LoggedShards(started).size(), 4u) << "the other shards were not running";
  EXPECT_EQ(final_status->running, 0u);
  EXPECT_EQ(final_status->prefetched, 0u);
  EXPECT_EQ(final_status->queued, 0u);
  EXPECT_EQ(final_status->node("boom").running, 0u);

  // The list says so too: "failed", and 0 in the running, prefetched and queued columns.
  const CommandResult list = cluster.Cli({"status"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("RUNNING"));
  bool seen = false;
  std::stringstream lines(list.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(job, 0) != 0) continue;
    seen = true;
    std::stringstream fields(line);
    std::string id, name, state, done, running, prefetched, queued;
    fields >> id >> name >> state >> done >> running >> prefetched >> queued;
    EXPECT_EQ(state, "failed") << line;
    EXPECT_EQ(running, "0") << line;
    EXPECT_EQ(prefetched, "0") << line;
    EXPECT_EQ(queued, "0") << line;
  }
  EXPECT_TRUE(seen) << list.out;
}

TEST(StatusTruthTest, PrefetchedTasksAreCountedApartFromRunningOnes) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2, {"--prefetch", "10"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  std::string why;
  const std::string job =
      cluster.Submit(WriteNoopSpec(cluster.dir(), "slow", 30, 120'000), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // Its heartbeat reports the 2 it started; the 10 behind them wait in its queue.
  WorkerStatusView w;
  ASSERT_TRUE(WaitUntil(
      [&] {
        w = cluster.WorkerViews()["w1"];
        return w.running == 2 && w.prefetched == 10;
      },
      60s, 100ms))
      << "w1 shows " << w.running << " running, " << w.prefetched << " prefetched\n"
      << cluster.Logs();
  EXPECT_EQ(w.slots, 2u);

  const auto st = cluster.Job(job);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->running, 2u);
  EXPECT_EQ(st->prefetched, 10u);
  EXPECT_EQ(st->queued, 18u);
  EXPECT_EQ(st->node("n").running, 2u);
  EXPECT_EQ(st->node("n").prefetched, 10u);

  const auto pool = cluster.Coordinator();
  ASSERT_TRUE(pool) << cluster.Logs();
  EXPECT_EQ(pool->running_tasks, 2u);
  EXPECT_EQ(pool->prefetched_tasks, 10u);
  EXPECT_EQ(pool->queued_cpu_tasks, 18u);
  // 2 running + 10 prefetched + 18 queued want 30 slots: 15 workers of 2.
  EXPECT_EQ(pool->recommended_workers, 15u);

  const CommandResult text = cluster.Cli({"workers"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("RUNNING"));
  EXPECT_THAT(text.out, HasSubstr("PREFETCHED"));
  EXPECT_THAT(text.out, Not(HasSubstr("LOAD")));
  EXPECT_THAT(text.out, ::testing::ContainsRegex("w1 .* alive +2 +2 +10 "));
  const CommandResult one = cluster.Cli({"status", job});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_THAT(one.out, HasSubstr("2 running, 10 prefetched, 18 queued"));
  EXPECT_THAT(one.out, HasSubstr("duration: "));
  ASSERT_EQ(cluster.Cli({"cancel", job}).exit_code, 0);
}

TEST(StatusTruthTest, ADrainedWorkerShowsDrainedAndAKilledOneLost) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("leaves", 1);
  cluster.StartWorker("killed", 1);
  // A worker that stays: with none heard at all, the coordinator blames its own link and
  // gives up on nobody.
  cluster.StartWorker("stays", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(3)) << cluster.Logs();

  const CommandResult drain = cluster.Cli({"drain", "leaves"});
  ASSERT_EQ(drain.exit_code, 0) << drain.err << cluster.Logs();
  const auto code = cluster.worker("leaves").WaitExit(60s);
  ASSERT_TRUE(code) << "the drained worker did not leave\n" << cluster.Logs();
  EXPECT_EQ(*code, 0);
  std::string state;
  EXPECT_TRUE(WaitUntil(
      [&] {
        state = cluster.Workers()["leaves"].first;
        return state == "drained";
      },
      30s, 100ms))
      << "a drained worker shows " << state << "\n" << cluster.Logs();

  cluster.worker("killed").Signal(SIGKILL);
  EXPECT_TRUE(WaitUntil(
      [&] {
        state = cluster.Workers()["killed"].first;
        return state == "lost";
      },
      60s, 100ms))
      << "a killed worker shows " << state << "\n" << cluster.Logs();
  EXPECT_EQ(cluster.Workers()["leaves"].first, "drained") << "a drained worker is never lost";
  EXPECT_EQ(cluster.Workers()["stays"].first, "alive");
  const auto pool = cluster.Coordinator();
  ASSERT_TRUE(pool) << cluster.Logs();
  EXPECT_EQ(pool->workers_alive, 1u);
}

TEST(StatusTruthTest, StatusListsJobsNewestFirstByStateAndLimit) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  std::vector<std::string> ids;
  for (const char* name : {"first", "second"}) {
    const std::string id = cluster.Submit(WriteNoopSpec(cluster.dir(), name, 2, 0));
    ASSERT_FALSE(id.empty()) << cluster.Logs();
    const auto done = cluster.WaitJobFinished(id);
    ASSERT_TRUE(done && done->state == "succeeded") << cluster.Logs();
    ids.push_back(id);
  }
  const std::string running = cluster.Submit(WriteNoopSpec(cluster.dir(), "third", 1, 120'000));
  ASSERT_FALSE(running.empty()) << cluster.Logs();
  ASSERT_TRUE(WaitUntil([&] { auto j = cluster.Job(running); return j && j->state == "running"; },
                        60s, 100ms))
      << cluster.Logs();

  EXPECT_EQ(ListedIds(cluster.Cli({"status", "--json", "--limit", "0"})),
            (std::vector<std::string>{running, ids[1], ids[0]}));
  EXPECT_EQ(ListedIds(cluster.Cli({"status", "--json", "--limit", "2"})),
            (std::vector<std::string>{running, ids[1]}));
  EXPECT_EQ(ListedIds(cluster.Cli({"status", "--json", "--state", "succeeded"})),
            (std::vector<std::string>{ids[1], ids[0]}));
  EXPECT_EQ(ListedIds(cluster.Cli({"status", "--json", "--state", "running"})),
            (std::vector<std::string>{running}));

  // The text: a line per job, no node lines, and a word when the limit cut the list.
  const CommandResult cut = cluster.Cli({"status", "--limit", "2"});
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_THAT(cut.out, HasSubstr("DURATION"));
  EXPECT_THAT(cut.out, HasSubstr(running));
  EXPECT_THAT(cut.out, HasSubstr(ids[1]));
  EXPECT_THAT(cut.out, Not(HasSubstr(ids[0])));
  EXPECT_THAT(cut.out, HasSubstr("more jobs not shown"));
  EXPECT_LT(cut.out.find(running), cut.out.find(ids[1])) << "newest first";
  const CommandResult all = cluster.Cli({"status"});
  EXPECT_THAT(all.out, Not(HasSubstr("more jobs not shown")));
  EXPECT_THAT(all.out, Not(HasSubstr("attempts"))) << "node lines belong to `status JOB`";

  const CommandResult bad = cluster.Cli({"status", "--state", "finished"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("not a job state"));
  ASSERT_EQ(cluster.Cli({"cancel", running}).exit_code, 0);
}

TEST(StatusTruthTest, SubmitWaitEndsWithTheSummaryRunPrints) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const CommandResult r =
      cluster.Cli({"submit", WriteNoopSpec(cluster.dir(), "waited", 3, 0).string(), "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err << cluster.Logs();
  EXPECT_THAT(r.out, ::testing::ContainsRegex("job j-[0-9]+ \\(waited\\) succeeded: 3/3 tasks, "
                                              "3 attempts, [0-9.]+ s wall"));
  EXPECT_THAT(r.out, HasSubstr("devices: cpu: 3 tasks"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("\n  n +done +3/3 tasks, 3 attempts"));
}

TEST(StatusTruthTest, ACoordinatorWithItsOwnClientsEndpointIsReachedWithClients) {
  const int client_port = FreePortPair();
  ASSERT_GT(client_port, 0);
  const std::string clients = "tcp://127.0.0.1:" + std::to_string(client_port);
  Cluster::Options options;
  options.coordinator_args = {"--clients", clients};
  Cluster cluster(options);
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  ASSERT_NE(net::ClientEndpointFor(cluster.endpoint()), clients) << "the ports collided";
  cluster.StartWorker("w1", 1);

  ASSERT_TRUE(WaitUntil(
      [&] {
        const CommandResult r = cluster.Cli({"workers", "--json", "--clients", clients});
        return r.exit_code == 0 && r.out.find("\"alive\"") != std::string::npos;
      },
      60s, 100ms))
      << cluster.Logs();
  const CommandResult status = cluster.Cli({"status", "--clients", clients});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("no jobs"));

  // The derived endpoint (workers port + 1) has nobody listening: said soon, and how to fix it.
  // The keys are named, as no coordinator published any for that port.
  const std::string keys = net::LocalPeerDir(cluster.keys().string(), net::KeyRole::kClient);
  const CommandResult derived = cluster.Cli({"status", "--keys", keys}, 30s);
  EXPECT_EQ(derived.exit_code, 1) << derived.out;
  const std::string tried = net::ClientEndpointFor(cluster.endpoint());
  EXPECT_THAT(derived.err, HasSubstr("no coordinator answered at " + tried + " within 3 s"));
  EXPECT_THAT(derived.err, HasSubstr("--clients ENDPOINT"));
}

}  // namespace
}  // namespace coupler::itest
