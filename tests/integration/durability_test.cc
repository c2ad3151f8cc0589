// Durable before reported, with a real full disk: the state directory on a small tmpfs that
// the test fills. While the store cannot write, no job is reported finished, no task is
// handed out, a submission fails as a runtime error (exit 1), and the log says so once; when
// space returns, the job finishes, and it is still finished after kill -9 and a restart.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"
#include "tests/integration/small_disk.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(DurabilityTest, AFullDiskStopsDispatchAndNothingIsReportedFinishedUntilItIsDurable) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a small tmpfs for the state";
  // The full disk, not a lost worker, is what this test is about.
  Cluster cluster(Cluster::Options::Timeouts(300, 20'000));
  SmallDisk disk(cluster.state(), "8m");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount tmpfs here";
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();

  const fs::path spec = cluster.dir() / "long.yaml";
  WriteFile(spec, "name: it-full-disk\nworkdir: work\nnodes:\n"
                  "  - {id: n, op: noop, params: {tasks: 400, sleep_ms: 20}}\n");
  const std::string job = cluster.Submit(spec);
  ASSERT_FALSE(job.empty()) << cluster.Logs();
  ASSERT_TRUE(WaitUntil([&] { auto st = cluster.Job(job); return st && st->done >= 20; }, 60s, 50ms))
      << cluster.Logs();

  disk.Fill();
  std::optional<JobView> st;
  // The job cannot finish durably: it stays running, and soon nothing more is handed out.
  ASSERT_TRUE(WaitUntil(
      [&] {
        CommandResult r = cluster.Cli({"status"});
        return r.out.find("STATE NOT WRITABLE") != std::string::npos;
      },
      60s, 100ms))
      << cluster.Logs();
  CommandResult refused = cluster.Cli({"submit", spec.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("the state cannot be written"));
  // Held tasks drain; after that the job sits, unfinished, for as long as the disk is full.
  ASSERT_TRUE(WaitUntil([&] { st = cluster.Job(job); return st && st->running == 0 && st->prefetched == 0; }, 60s, 100ms))
      << cluster.Logs();
  const uint64_t done_while_full = st->done;
  for (int i = 0; i < 10; ++i) {
    st = cluster.Job(job);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->state, "running");
    EXPECT_EQ(st->done, done_while_full) << "tasks were handed out while nothing could be stored";
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(Count(cluster.coordinator().err(), "cannot write the state"), 1u)
      << cluster.coordinator().err();

  disk.Free();
  st = cluster.WaitJobFinished(job, 120s);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded") << st->error;
  EXPECT_EQ(st->done, 400u);
  EXPECT_THAT(cluster.coordinator().err(), HasSubstr("writes again"));

  // What was reported finished survives kill -9.
  cluster.coordinator().Kill();
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();
  st = cluster.Job(job);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded");
  EXPECT_EQ(st->done, 400u);
}

}  // namespace
}  // namespace coupler::itest
