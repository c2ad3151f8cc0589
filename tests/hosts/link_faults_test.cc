// Links cut mid-job across hosts, what a user relies on afterwards:
//  - a worker cut off for twice --dead-after-ms is given up on, its tasks run elsewhere, the
//    result it finished during the cut arrives late and is dropped, every output is there
//    once and whole, and the worker comes back and takes work;
//  - the coordinator's own link cut far longer than --dead-after-ms gives up on nobody (the
//    workers show "silent", not "lost"), and when it returns the results finished meanwhile
//    are delivered: no task runs twice.
// Every test skips without root (network namespaces need it; CI runs as root).
#include <gtest/gtest.h>

#include <iostream>
#include <set>
#include <thread>

#include "tests/hosts/hosts_cluster.h"
#include "tests/hosts/logged_job.h"
#include "tests/hosts/test_bed.h"

namespace coupler::itest {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

long long Ms(Clock::duration d) { return duration_cast<milliseconds>(d).count(); }

// Each test runs with both kinds of cut: the cable pulled (kDown) and a failed switch (kSilent).
class LinkFaultsTest : public ::testing::TestWithParam<LinkCut> {};

TEST_P(LinkFaultsTest, WorkerCutOffForTwiceDeadAfterMidJobLosesNothingAndRejoins) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC"})) << bed.error();
  HostsCluster::Options options;
  options.heartbeat_ms = 300;
  options.dead_after_ms = 3000;
  HostsCluster cluster(bed, options);
  const Host& b = bed.host("hostB");
  ASSERT_TRUE(cluster.StartCoordinator(bed.host("hostA"))) << cluster.Logs();
  // One slot and one task held ahead each: both take part, and B holds work when cut.
  cluster.StartWorker(b, "wB", 1, {"--prefetch", "1"}, WorkerTag("wB"));
  cluster.StartWorker(bed.host("hostC"), "wC", 1, {"--prefetch", "1"}, WorkerTag("wC"));
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  constexpr int kShards = 12;
  const fs::path log = cluster.dir() / "runs.log";
  std::string why;
  const std::string job =
      cluster.Submit(WriteLoggedCopyJob(cluster.dir(), "cut", kShards, log, "0.8"), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // B is running a copy: it logged a shard whose output is not there yet, and holds work.
  const fs::path work = LoggedJobWork(cluster.dir(), "cut");
  const bool b_busy = WaitUntil(
      [&] {
        bool running_copy = false;
        for (const auto& [shard, worker] : LoggedRuns(log)) {
          running_copy |= worker == "wB" && !fs::exists(work / "copy" / CommandPartName(shard));
        }
        return running_copy && cluster.Workers()["wB"].running > 0;
      },
      90s, 20ms);
  ASSERT_TRUE(b_busy) << "wB never ran a copy\n" << cluster.Logs();

  ASSERT_TRUE(bed.CutLink(b, GetParam())) << bed.Logs();
  const auto cut = Clock::now();
  const milliseconds hold(2 * options.dead_after_ms);
  const size_t runs_at_cut = LoggedRuns(log).size();
  std::optional<Clock::duration> dead_at;
  WaitUntil(
      [&] {
        if (cluster.Workers()["wB"].state != "lost") return false;
        dead_at = Clock::now() - cut;
        return true;
      },
      hold, 100ms);
  // The cut lasts its whole length, whatever was seen meanwhile.
  std::this_thread::sleep_until(cut + hold);
  size_t b_runs_in_cut = 0;
  {
    const auto runs = LoggedRuns(log);
    for (size_t i = runs_at_cut; i < runs.size(); ++i) b_runs_in_cut += runs[i].second == "wB";
  }
  ASSERT_TRUE(bed.RestoreLink(b)) << bed.Logs();
  const auto restored = Clock::now();
  ASSERT_TRUE(dead_at) << "wB was not declared dead during a " << Ms(hold) << " ms cut\n"
                       << cluster.Logs();

  const auto st = cluster.WaitJobFinished(job, 180s);
  ASSERT_TRUE(st) << cluster.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error << "\n" << cluster.Logs();
  EXPECT_EQ(st->done, st->total);
  EXPECT_EQ(st->node("copy").done, static_cast<uint64_t>(kShards));
  EXPECT_EQ(CheckCopiedShards(work, kShards), "");
  const auto runs = LoggedRuns(log);
  EXPECT_EQ(RunsPerShard(runs).size(), static_cast<size_t>(kShards)) << "a shard never ran";

  // What B finished during the cut arrived after the restore, for attempts given to C: dropped.
  std::optional<CoordinatorView> c;
  const bool dropped = WaitUntil(
      [&] {
        c = cluster.Coordinator();
        return c && c->stale_outcomes_dropped > 0;
      },
      90s, 100ms);
  EXPECT_TRUE(dropped) << "no late outcome of wB was dropped (" << b_runs_in_cut
                       << " copies started on wB during the cut)\n"
                       << cluster.Logs();

  const WorkerView back = cluster.WaitWorkerState("wB", "alive", 90s);
  const auto back_after = Clock::now() - restored;
  std::cout << "wB declared dead " << Ms(*dead_at) << " ms into the " << Ms(restored - cut)
            << " ms cut, started " << b_runs_in_cut << " copies during it; " << back.state << " "
            << Ms(back_after) << " ms after the restore; stale outcomes dropped: "
            << (c ? c->stale_outcomes_dropped : 0) << "; attempts of copy: "
            << st->node("copy").attempts << " for " << kShards << " shards\n";
  ASSERT_EQ(back.state, "alive") << "wB did not come back after its link did\n" << cluster.Logs();

  // And it takes work again.
  const fs::path again_log = cluster.dir() / "again.log";
  const std::string again =
      cluster.Submit(WriteLoggedCopyJob(cluster.dir(), "again", 6, again_log, "0.3"), &why);
  ASSERT_FALSE(again.empty()) << why << cluster.Logs();
  const auto st2 = cluster.WaitJobFinished(again, 120s);
  ASSERT_TRUE(st2) << cluster.Logs();
  ASSERT_EQ(st2->state, "succeeded") << st2->error << "\n" << cluster.Logs();
  EXPECT_EQ(WorkersThatRan(LoggedRuns(again_log)).count("wB"), 1u)
      << "the rejoined worker ran nothing\n" << cluster.Logs();
  EXPECT_EQ(CheckCopiedShards(LoggedJobWork(cluster.dir(), "again"), 6), "");
}

TEST_P(LinkFaultsTest, CoordinatorCutOffFarPastDeadAfterGivesUpOnNobodyAndRunsEachTaskOnce) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC"})) << bed.error();
  HostsCluster::Options options;
  options.heartbeat_ms = 500;
  options.dead_after_ms = 3000;
  HostsCluster cluster(bed, options);
  const Host& a = bed.host("hostA");
  ASSERT_TRUE(cluster.StartCoordinator(a)) << cluster.Logs();
  // Two tasks held ahead each: the workers go on running what they hold during the cut.
  cluster.StartWorker(bed.host("hostB"), "wB", 1, {"--prefetch", "2"}, WorkerTag("wB"));
  cluster.StartWorker(bed.host("hostC"), "wC", 1, {"--prefetch", "2"}, WorkerTag("wC"));
  ASSERT_TRUE(cluster.WaitWorkersAlive(2)) << cluster.Logs();

  constexpr int kShards = 16;
  const fs::path log = cluster.dir() / "runs.log";
  std::string why;
  const std::string job =
      cluster.Submit(WriteLoggedCopyJob(cluster.dir(), "blackout", kShards, log, "1"), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();
  // Some copies finished, and both workers running one.
  const bool mid_job = WaitUntil(
      [&] {
        auto st = cluster.Job(job);
        if (!st || st->finished() || st->node("copy").done < 2) return false;
        auto w = cluster.Workers();
        return w["wB"].running > 0 && w["wC"].running > 0;
      },
      90s, 50ms);
  ASSERT_TRUE(mid_job) << "the job never had copies done and both workers busy\n"
                       << cluster.Logs();
  const uint64_t done_at_cut = cluster.Job(job)->node("copy").done;

  // The client runs on the coordinator's host, so it still reaches it during the cut.
  ASSERT_TRUE(bed.CutLink(a, GetParam())) << bed.Logs();
  const auto cut = Clock::now();
  const milliseconds hold(10000);
  std::set<std::string> seen_silent, seen_dead;
  std::optional<Clock::duration> both_silent_at;
  WaitUntil(
      [&] {
        for (const auto& [id, w] : cluster.Workers()) {
          if (w.state == "silent") seen_silent.insert(id);
          if (w.state == "lost") seen_dead.insert(id);
        }
        if (!both_silent_at && seen_silent.size() == 2) both_silent_at = Clock::now() - cut;
        return Clock::now() - cut >= hold;
      },
      hold + 5s, 200ms);
  std::this_thread::sleep_until(cut + hold);
  const size_t runs_in_cut = LoggedRuns(log).size();
  ASSERT_TRUE(bed.RestoreLink(a)) << bed.Logs();
  const auto restored = Clock::now();

  // Until the job ends, nobody is declared dead either: after the restore every worker gets a
  // fresh timeout, and what they finished meanwhile is delivered.
  std::optional<JobView> st;
  WaitUntil(
      [&] {
        for (const auto& [id, w] : cluster.Workers()) {
          if (w.state == "lost") seen_dead.insert(id);
        }
        if (auto v = cluster.Job(job)) st = v;
        return st && st->finished();
      },
      180s, 200ms);
  const auto finished_after = Clock::now() - restored;
  ASSERT_TRUE(st) << cluster.Logs();
  std::cout << "cut " << Ms(restored - cut) << " ms with " << done_at_cut
            << " copies done; both workers silent " << (both_silent_at ? Ms(*both_silent_at) : -1)
            << " ms into it; " << runs_in_cut << " copies started by its end; job " << st->state
            << " " << Ms(finished_after) << " ms after the restore\n";
  EXPECT_EQ(seen_dead, std::set<std::string>{}) << "a worker was given up on\n" << cluster.Logs();
  EXPECT_EQ(seen_silent, (std::set<std::string>{"wB", "wC"}))
      << "not every worker showed as silent during the cut";
  ASSERT_EQ(st->state, "succeeded") << st->error << "\n" << cluster.Logs();
  EXPECT_EQ(st->node("copy").done, static_cast<uint64_t>(kShards));
  EXPECT_EQ(st->node("copy").attempts, static_cast<uint64_t>(kShards)) << "a copy was re-run";
  EXPECT_EQ(CheckCopiedShards(LoggedJobWork(cluster.dir(), "blackout"), kShards), "");
  const auto runs = LoggedRuns(log);
  const auto per_shard = RunsPerShard(runs);
  EXPECT_EQ(per_shard.size(), static_cast<size_t>(kShards)) << "a shard never ran";
  for (const auto& [shard, n] : per_shard) {
    EXPECT_EQ(n, 1) << "shard " << shard << " ran " << n << " times";
  }
  EXPECT_EQ(WorkersThatRan(runs), (std::set<std::string>{"wB", "wC"}));
  const auto c = cluster.Coordinator();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->stale_outcomes_dropped, 0u) << "an outcome finished during the cut was dropped";
}

INSTANTIATE_TEST_SUITE_P(Modes, LinkFaultsTest,
                         ::testing::Values(LinkCut::kDown, LinkCut::kSilent),
                         [](const ::testing::TestParamInfo<LinkCut>& p) {
                           return p.param == LinkCut::kDown ? "Down" : "Silent";
                         });

}  // namespace
}  // namespace coupler::itest
