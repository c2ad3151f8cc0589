// A worker on a host that does not see the shared filesystem: it refuses the job's tasks with
// the reason (no shard written where nobody else sees it), the job is sent no more tasks there
// and succeeds on the other hosts, and status tells the user which worker and why.
// Skips without root (network namespaces need it; CI runs as root).
#include <gtest/gtest.h>

#include <iostream>

#include "tests/hosts/hosts_cluster.h"
#include "tests/hosts/logged_job.h"
#include "tests/hosts/test_bed.h"

namespace coupler::itest {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(what, at)) != std::string::npos; at += what.size()) ++n;
  return n;
}

TEST(SharedFsTest, AWorkerThatCannotSeeTheWorkdirRefusesOnceAndTheJobRunsElsewhere) {
  COUPLER_SKIP_WITHOUT_TEST_BED();
  TestBed bed;
  ASSERT_TRUE(bed.Start({"hostA", "hostB", "hostC", "hostD"})) << bed.error();
  HostsCluster cluster(bed);
  const Host& d = bed.host("hostD");
  ASSERT_TRUE(cluster.StartCoordinator(bed.host("hostA"))) << cluster.Logs();

  // The job's spec, inputs and workdir live in SHARED, which hostD's worker sees as an empty
  // tmpfs (its keys and the run log lie outside it). It is the only worker when the job comes,
  // and the larger one (2 slots, 2 held ahead), so it is offered the first tasks.
  const fs::path shared = cluster.dir() / "shared";
  fs::create_directories(shared);
  cluster.StartWorkerWithout(d, shared, "wD", 2, {"--prefetch", "2"}, WorkerTag("wD"));
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  constexpr int kShards = 8;
  const fs::path log = cluster.dir() / "runs.log";
  std::string why;
  const std::string job =
      cluster.Submit(WriteLoggedCopyJob(shared, "nfs", kShards, log, "0.3"), &why);
  ASSERT_FALSE(job.empty()) << why << cluster.Logs();

  // wD refuses what it was sent, and the job holds nothing there any more.
  const std::string refusal_line = "job " + job + ": worker wD gets none of its tasks from now on";
  std::optional<JobView> refused;
  ASSERT_TRUE(WaitUntil(
      [&] {
        refused = cluster.Job(job);
        return refused && refused->refused_hosts.count("wD") != 0 && refused->running == 0 &&
               refused->prefetched == 0;
      },
      60s, 50ms))
      << "wD never refused the job\n" << cluster.Logs();
  const size_t first_refusals = Count(cluster.coordinator().err(), refusal_line);
  EXPECT_EQ(refused->state, "running");
  EXPECT_EQ(refused->done, 0u);

  cluster.StartWorker(bed.host("hostB"), "wB", 1, {"--prefetch", "1"}, WorkerTag("wB"));
  cluster.StartWorker(bed.host("hostC"), "wC", 1, {"--prefetch", "1"}, WorkerTag("wC"));
  const auto st = cluster.WaitJobFinished(job, 180s);
  ASSERT_TRUE(st) << cluster.Logs();
  ASSERT_EQ(st->state, "succeeded") << st->error << "\n" << cluster.Logs();
  EXPECT_EQ(st->done, st->total);
  EXPECT_EQ(CheckCopiedShards(LoggedJobWork(shared, "nfs"), kShards), "");
  const auto runs = LoggedRuns(log);
  EXPECT_EQ(RunsPerShard(runs).size(), static_cast<size_t>(kShards));
  EXPECT_EQ(WorkersThatRan(runs).count("wD"), 0u) << "wD ran a copy it cannot see the input of";

  // It refused only the batch it was sent before its first refusal arrived (at most its 2 slots
  // + 2 held ahead), and nothing more while it sat idle through the rest of the job.
  const size_t refusals = Count(cluster.coordinator().err(), refusal_line);
  EXPECT_GE(first_refusals, 1u);
  EXPECT_LE(first_refusals, 4u) << cluster.coordinator().err();
  EXPECT_EQ(refusals, first_refusals) << "wD was sent the job's tasks after refusing them\n"
                                      << cluster.coordinator().err();
  EXPECT_EQ(cluster.Workers()["wD"].state, "alive") << "a refusal is no failure of the worker";

  // The job's own run directory under the spec's workdir.
  const std::string reason_start = "workdir " + (shared / "nfs-work" / "runs" / job).string() +
                                   " not visible on host " + d.address() +
                                   ": coupler needs a shared filesystem";
  ASSERT_EQ(st->refused_hosts.size(), 1u) << "only wD refuses";
  ASSERT_EQ(st->refused_hosts.count("wD"), 1u);
  EXPECT_EQ(st->refused_hosts.at("wD").rfind(reason_start, 0), 0u)
      << st->refused_hosts.at("wD") << "\ndoes not start with\n" << reason_start;

  const CommandResult human = cluster.Cli({"status", job});
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("not sent to worker wD (" + d.address() + "): " + reason_start),
            std::string::npos)
      << human.out;
  std::cout << "wD refused " << refusals << " task(s); status says: "
            << st->refused_hosts.at("wD") << "\n";
}

}  // namespace
}  // namespace coupler::itest
