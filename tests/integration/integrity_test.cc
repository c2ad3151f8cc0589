// Exactly once, credited right, with real processes: a worker stopped (SIGSTOP) long enough to
// be declared dead comes back with a late failure that must not fail the attempt running
// elsewhere, and with a queue of tasks already given to others that it must not run again.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"

namespace coupler::itest {
namespace {

bool WorkerIs(Cluster& cluster, const std::string& id, const std::string& state) {
  auto workers = cluster.Workers();
  return workers.count(id) != 0 && workers[id].first == state;
}

TEST(IntegrityTest, ALateFailureFromAStoppedWorkerDoesNotFailTheRetry) {
  Cluster cluster(Cluster::Options::Timeouts(300, 1500));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  WriteSyntheticCsv(cluster.dir() / "in.csv", 100, 3);
  const fs::path m = cluster.dir() / "marks";
  fs::create_directories(m);
  const std::string wait_for = "while [ ! -e " + m.string() + "/";
  // The first attempt fails when told to; the second (the last that `retries: 1` allows)
  // succeeds when told to. Both are running at once in between.
  const std::string command =
      "if mkdir " + m.string() + "/a1 2>/dev/null; then touch " + m.string() + "/started1; " +
      wait_for + "fail1 ]; do sleep 0.05; done; exit 1; fi; mkdir " + m.string() + "/a2; " +
      wait_for + "release ]; do sleep 0.05; done; cp {input} {output}";
  const fs::path spec = cluster.dir() / "late.yaml";
  WriteFile(spec, "name: it-late-failure\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: 1}}\n"
                  "  - id: copy\n    op: exec\n    inputs: [import]\n    retries: 1\n"
                  "    params:\n      command: \"" + command + "\"\n      timeout: 120\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(m / "started1"); }, 60s, 20ms)) << cluster.Logs();

  // w1 stops (its command goes on), is declared dead, and the retry starts on w2. Only once
  // the coordinator has heard that w1 started it: a start it never heard of is re-queued
  // uncharged, and the retry would be attempt 0 again.
  cluster.StartWorker("w2", 1, {"--prefetch", "1"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto views = cluster.WorkerViews();
        auto w1 = views.find("w1");
        return w1 != views.end() && w1->second.running > 0;
      },
      60s, 20ms))
      << cluster.Logs();
  cluster.worker("w1").Signal(SIGSTOP);
  ASSERT_TRUE(WaitUntil([&] { return WorkerIs(cluster, "w1", "lost"); }, 60s, 50ms)) << cluster.Logs();
  ASSERT_TRUE(WaitUntil([&] { return fs::exists(m / "a2"); }, 60s, 20ms)) << cluster.Logs();

  // The first attempt fails while w1 is stopped; w1 wakes and reports it, late.
  WriteFile(m / "fail1", "");
  const auto before = cluster.Coordinator();
  ASSERT_TRUE(before);
  cluster.worker("w1").Signal(SIGCONT);
  // Its late failure is either dropped as stale (sent before w1 registered again) or released
  // at the registration (w1 reported the attempt, which is not its to run any more, and stops
  // it): either way, not the retry's.
  std::optional<CoordinatorView> c;
  auto released = [&] {
    return cluster.worker("w1").err().find("no longer gives them to us") != std::string::npos;
  };
  const bool dropped = WaitUntil(
      [&] {
        c = cluster.Coordinator();
        auto st = cluster.Job(job);
        return (c && c->stale_outcomes_dropped > before->stale_outcomes_dropped) || released() ||
               (st && st->finished());
      },
      60s, 50ms);
  ASSERT_TRUE(dropped) << cluster.Logs();
  auto mid = cluster.Job(job);
  ASSERT_TRUE(mid);
  EXPECT_EQ(mid->state, "running") << "the late failure was counted: " << mid->error;

  WriteFile(m / "release", "");
  const auto st = cluster.WaitJobFinished(job);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error << "\n" << cluster.Logs();
  EXPECT_EQ(st->node("copy").attempts, 2u);
  EXPECT_EQ(ReadFile(cluster.dir() / "work" / "latest" / "copy" / CommandPartName(0)),
            ReadFile(cluster.dir() / "work" / "latest" / "import" / PartName(0)));
  c = cluster.Coordinator();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->stale_outcomes_dropped >= 1u || released()) << cluster.Logs();
  // Back and registered again: it may get work once more.
  EXPECT_TRUE(WaitUntil([&] { return WorkerIs(cluster, "w1", "alive"); }, 30s, 50ms)) << cluster.Logs();
}

TEST(IntegrityTest, AWorkerBackFromTheDeadDoesNotRunTheQueueGivenToOthers) {
  Cluster cluster(Cluster::Options::Timeouts(300, 1500));
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 1, {"--prefetch", "10"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  constexpr int kShards = 12;
  WriteSyntheticCsv(cluster.dir() / "in.csv", 240, 3);
  const fs::path log = cluster.dir() / "runs.log";
  const fs::path spec = cluster.dir() / "stale.yaml";
  WriteFile(spec, "name: it-stale-queue\nworkdir: work\nnodes:\n"
                  "  - {id: import, op: import_csv, inputs: [in.csv], params: {shards: " +
                      std::to_string(kShards) + "}}\n"
                  "  - id: copy\n    op: exec\n    inputs: [import]\n    params:\n"
                  "      command: \"echo {shard} >> " + log.string() +
                      " && sleep 0.3 && cp {input} {output}\"\n      timeout: 120\n");
  std::string why;
  const std::string job = cluster.Submit(spec, &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  // w1 runs one copy and holds the rest queued behind it.
  ASSERT_TRUE(WaitUntil(
      [&] {
        auto w = cluster.Workers();
        return !LoggedShards(log).empty() && w.count("w1") != 0 && w["w1"].second >= 8;
      },
      60s, 20ms))
      << cluster.Logs();
  // w2 is heard while w1 is silent, so w1 is given up on (with no worker heard at all, the
  // coordinator would wait for its link to come back instead).
  cluster.StartWorker("w2", 1, {"--prefetch", "2"});
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();
  cluster.worker("w1").Signal(SIGSTOP);
  ASSERT_TRUE(WaitUntil([&] { return WorkerIs(cluster, "w1", "lost"); }, 60s, 50ms)) << cluster.Logs();
  const auto st = cluster.WaitJobFinished(job);
  ASSERT_TRUE(st) << cluster.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error;

  // w1 wakes to find its queue given away: it says so, and runs none of it.
  cluster.worker("w1").Signal(SIGCONT);
  ASSERT_TRUE(WaitUntil(
      [&] { return cluster.worker("w1").err().find("released") != std::string::npos; }, 60s, 50ms))
      << cluster.Logs();
  EXPECT_THAT(cluster.worker("w1").err(), ::testing::HasSubstr("the coordinator no longer gives them to us"));
  ASSERT_TRUE(WaitUntil([&] { return WorkerIs(cluster, "w1", "alive"); }, 30s, 50ms)) << cluster.Logs();
  // Every shard ran once, but for the one running when w1 stopped (run again by w2) and at most
  // one its slot took from the queue in the instant it woke, before it heard it was forgotten.
  const std::vector<int> runs = LoggedShards(log);
  EXPECT_LE(runs.size(), static_cast<size_t>(kShards) + 2) << "stale tasks ran again";
  std::vector<std::string> expected;
  for (int s = 0; s < kShards; ++s) expected.push_back(CommandPartName(s));
  EXPECT_EQ(ListDir(cluster.dir() / "work" / "latest" / "copy"), expected);
}

}  // namespace
}  // namespace coupler::itest
