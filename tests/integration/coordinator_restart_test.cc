// The coordinator killed with SIGKILL mid-job and started again on the same state and port:
// workers reconnect by themselves, the job finishes, and no task whose completion the old
// coordinator had reported is run again.
#include <signal.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "client/client.h"
#include "coordinator/coordinator.h"
#include "tests/integration/coupler_cluster.h"
#include "runtime/net/endpoint.h"

namespace coupler::itest {
namespace {


TEST(CoordinatorRestartTest, ResumesFromStateWithoutRerunningCommittedTasks) {
  // Workers outlive a coordinator restart of a few seconds without being declared dead.
  Cluster cluster(Cluster::Options::Timeouts(300, 3000));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1, {"--prefetch", "1"});
  cluster.StartWorker("w2", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  constexpr int kShards = 16;
  WriteSyntheticCsv(cluster.dir() / "in.csv", 800, 3);
  const fs::path log = cluster.dir() / "finished.log";
  const fs::path spec = cluster.dir() / "restart.yaml";
  // A task appends its shard to the log as its last step, so a logged shard is a finished
  // command, and every task the coordinator counts as done has been logged.
  WriteFile(spec, "name: it-coordinator-restart\n"
                  "workdir: work\n"
                  "nodes:\n"
                  "  - id: import\n"
                  "    op: import_csv\n"
                  "    inputs: [in.csv]\n"
                  "    params: {shards: " + std::to_string(kShards) + "}\n"
                  "  - id: run\n"
                  "    op: exec\n"
                  "    inputs: [import]\n"
                  "    params:\n"
                  "      command: \"sleep 0.5 && cp {input} {output} && echo {shard} >> " +
                  log.string() + "\"\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // Status replies are flushed to the state store before they are sent, so `done` counts only
  // durable commits, each of them already logged. When the log is the same before and after
  // a status whose `done` equals the log's length, the logged shards are exactly the durable
  // commits: those must never run again. Kill at such a moment, with work left on both sides.
  // The in-process client keeps that status round trip to a millisecond or so, so such quiet
  // moments are easy to find even on a loaded machine.
  auto client = client::Client::Connect(net::ClientEndpointFor(cluster.endpoint()));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  std::vector<int> committed;
  const bool killed = WaitUntil(
      [&] {
        const std::vector<int> before = LoggedShards(log);
        const auto reply = (*client)->Status(job);
        const std::vector<int> after = LoggedShards(log);
        if (!reply.ok() || reply->jobs.size() != 1 || before != after) return false;
        uint64_t done = 0;
        for (const auto& n : reply->jobs[0].nodes) done = n.id == "run" ? n.tasks_done : done;
        if (done != after.size() || done < 3 || done > kShards - 4) return false;
        cluster.coordinator().Kill();
        committed = after;
        return true;
      },
      60s, 10ms);
  ASSERT_TRUE(killed) << "no quiet moment to kill the coordinator in\n" << cluster.Logs();
  ASSERT_EQ(std::set<int>(committed.begin(), committed.end()).size(), committed.size())
      << "a task ran twice before the coordinator was even killed";

  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  const auto final_status = cluster.WaitJobFinished(job, 90s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << "\n" << cluster.Logs();
  EXPECT_EQ(final_status->done, final_status->total);
  EXPECT_EQ(cluster.Workers().size(), 2u) << "both workers should have registered again";

  // Committed before the kill: logged exactly once. In flight at the kill: may have run twice.
  const std::vector<int> logged = LoggedShards(log);
  std::map<int, int> runs;
  for (int s : logged) ++runs[s];
  for (int s : committed) {
    EXPECT_EQ(runs[s], 1) << "shard " << s << " was committed before the kill and ran again";
  }
  // Attempts survive the restart: every run is counted, those in flight at the kill included.
  EXPECT_GE(final_status->attempts, logged.size());
  EXPECT_GE(final_status->attempts, final_status->total);
  for (int s = 0; s < kShards; ++s) {
    EXPECT_GE(runs[s], 1) << "shard " << s << " never ran";
    const fs::path out = cluster.dir() / "work" / "latest" / "run" / CommandPartName(s);
    EXPECT_EQ(ReadFile(out), ReadFile(cluster.dir() / "work" / "latest" / "import" / PartName(s)))
        << out;
  }
}

// 4 workers x 1 slot hold 8 tasks (4 running, 4 queued behind them) when the coordinator
// stops, killed or asked to: the workers report what they hold when they register again, the
// restarted coordinator adopts all 8 attempts, and each task runs exactly once: its command's
// own side effect is counted, no outcome is dropped as stale, no attempt is made twice.
void RestartMidJobRunsEveryTaskOnce(int signal) {
  Cluster cluster(Cluster::Options::Timeouts(300, 5000));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  for (const char* id : {"w1", "w2", "w3", "w4"}) cluster.StartWorker(id, 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(4)) << cluster.Logs();

  constexpr int kShards = 8;
  WriteSyntheticCsv(cluster.dir() / "in.csv", 400, 3);
  const fs::path started = cluster.dir() / "started.log";
  const fs::path spec = cluster.dir() / "adopt.yaml";
  WriteFile(spec, "name: it-adopt\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: " +
                      std::to_string(kShards) + "}}\n"
                  "  - id: run\n    op: exec\n    inputs: [import]\n    params:\n"
                  "      command: \"echo {shard} >> " + started.string() +
                      " && sleep 4 && cp {input} {output}\"\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  // Every task handed out: 4 started, 4 queued behind them; then one status, which writes
  // the buffered state (the record of what was sent) before it answers.
  ASSERT_TRUE(WaitUntil(
      [&] {
        uint64_t held = 0;
        for (const auto& [id, w] : cluster.Workers()) held += w.second;
        return held == kShards && LoggedShards(started).size() == 4;
      },
      60s, 20ms))
      << cluster.Logs();
  ASSERT_TRUE(cluster.Job(job));
  if (signal == SIGKILL) {
    cluster.coordinator().Kill();
  } else {
    cluster.coordinator().Signal(signal);
  }
  ASSERT_TRUE(cluster.coordinator().WaitExit(30s)) << cluster.Logs();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  const auto final_status = cluster.WaitJobFinished(job, 90s);
  ASSERT_TRUE(final_status) << cluster.Logs();
  ASSERT_EQ(final_status->state, "succeeded") << final_status->error << "\n" << cluster.Logs();

  std::vector<int> runs = LoggedShards(started);
  std::sort(runs.begin(), runs.end());
  EXPECT_EQ(runs, std::vector<int>({0, 1, 2, 3, 4, 5, 6, 7})) << "a task ran twice or never";
  EXPECT_EQ(final_status->node("run").attempts, static_cast<uint64_t>(kShards));
  const auto c = cluster.Coordinator();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->stale_outcomes_dropped, 0u);
  const std::string events = ReadFile(cluster.state() / "events.jsonl");
  size_t adopted = 0;
  for (size_t at = events.find("\"attempt_adopted\""); at != std::string::npos;
       at = events.find("\"attempt_adopted\"", at + 1)) {
    ++adopted;
  }
  EXPECT_EQ(adopted, static_cast<size_t>(kShards)) << events;
  EXPECT_EQ(events.find("attempt_abandoned"), std::string::npos) << events;
  for (int s = 0; s < kShards; ++s) {
    const fs::path out = cluster.dir() / "work" / "latest" / "run" / CommandPartName(s);
    EXPECT_EQ(ReadFile(out), ReadFile(cluster.dir() / "work" / "latest" / "import" / PartName(s)))
        << out;
  }
}

TEST(CoordinatorRestartTest, ACrashMidJobLosesNothingInFlight) { RestartMidJobRunsEveryTaskOnce(SIGKILL); }

TEST(CoordinatorRestartTest, APlannedRestartMidJobLosesNothingInFlight) {
  RestartMidJobRunsEveryTaskOnce(SIGTERM);
}

// A restart plans the job from what was admitted, not from the inputs as they are after it:
// a shard that appeared in the input directory meanwhile must not shift which task copies
// which file.
TEST(CoordinatorRestartTest, ARestartPlansFromWhatWasAdmittedNotFromTheInputsAsTheyAreNow) {
  // Workers outlive a coordinator restart of a few seconds without being declared dead.
  Cluster cluster(Cluster::Options::Timeouts(300, 3000));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path in = cluster.dir() / "in";
  fs::create_directories(in);
  const std::vector<std::string> names = {"b", "c", "d", "e"};
  for (const auto& n : names) WriteFile(in / (n + ".npy"), "shard " + n);
  const fs::path log = cluster.dir() / "done.log";
  const fs::path spec = cluster.dir() / "copy.yaml";
  WriteFile(spec, "name: it-restart-inputs\nworkdir: work\nnodes:\n"
                  "  - id: copy\n    op: exec\n    inputs: [in]\n    params:\n"
                  "      command: \"sleep 0.4 && cp {input} {output} && echo {shard} >> " +
                      log.string() + "\"\n");
  const std::string job = cluster.Submit(spec);
  ASSERT_FALSE(job.empty()) << cluster.Logs();
  ASSERT_TRUE(WaitUntil([&] { return !LoggedShards(log).empty(); }, 60s, 20ms)) << cluster.Logs();
  cluster.coordinator().Kill();
  WriteFile(in / "a.npy", "shard a");  // sorts first: a re-listing would shift every task
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  const auto st = cluster.WaitJobFinished(job, 90s);
  ASSERT_TRUE(st) << cluster.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error << "\n" << cluster.Logs();
  EXPECT_EQ(st->total, names.size());
  std::vector<std::string> expected;
  for (size_t i = 0; i < names.size(); ++i) expected.push_back(CommandPartName(static_cast<int>(i)));
  EXPECT_EQ(ListDir(cluster.dir() / "work" / "latest" / "copy"), expected);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(ReadFile(cluster.dir() / "work" / "latest" / "copy" / CommandPartName(static_cast<int>(i))),
              "shard " + names[i])
        << "task " << i << " copied the wrong input";
  }
}

// A finished job is what its row says after a restart: not validated again (its inputs are
// gone), not failed, not forgotten.
TEST(CoordinatorRestartTest, AFinishedJobStaysFinishedWhenItsInputsAreGone) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const fs::path in = cluster.dir() / "in";
  fs::create_directories(in);
  for (const char* n : {"x", "y", "z"}) WriteFile(in / (std::string(n) + ".npy"), n);
  const fs::path spec = cluster.dir() / "done.yaml";
  WriteFile(spec, "name: it-finished\nworkdir: work\nnodes:\n"
                  "  - {id: copy, op: exec, inputs: [in], params: {command: \"cp {input} {output}\"}}\n");
  const std::string job = cluster.Submit(spec);
  ASSERT_FALSE(job.empty()) << cluster.Logs();
  auto st = cluster.WaitJobFinished(job);
  ASSERT_TRUE(st);
  ASSERT_EQ(st->state, "succeeded") << st->error;

  cluster.coordinator().Kill();
  fs::remove_all(in);
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  st = cluster.Job(job);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_EQ(st->total, 3u);
  EXPECT_EQ(st->done, 3u);
  EXPECT_EQ(st->attempts, 3u);
  EXPECT_EQ(cluster.coordinator().err().find("cannot resume"), std::string::npos)
      << cluster.coordinator().err();
}

}  // namespace
}  // namespace coupler::itest
