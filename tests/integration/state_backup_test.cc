// `coupler state backup` while the coordinator runs, and `restore` into a fresh directory, as an
// operator does before an upgrade or after losing a disk: the copy is owner-only (the database
// holds every spec, keys/ the coordinator's secret key), a restore refuses to overwrite a state,
// and a coordinator started on the restored directory has the jobs the backup held (and not the
// later ones), its workers' keys still accepted.
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/integration/coupler_cluster.h"
#include "tests/integration/key_sets.h"

namespace coupler::itest {
namespace {

using ::testing::HasSubstr;

unsigned ModeOf(const fs::path& p) {
  struct stat st{};
  return ::stat(p.c_str(), &st) == 0 ? (st.st_mode & 0777) : 0;
}

TEST(StateBackupTest, AnOnlineBackupRestoredIntoANewDirectoryResumesWhatItHeld) {
  Cluster cluster;
  ASSERT_TRUE(cluster.StartCoordinator()) << cluster.Logs();
  Process& worker = cluster.StartWorker("w1", 2);
  ASSERT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const std::string before = cluster.Submit(WriteNoopSpec(cluster, "before-backup", 8, 0));
  ASSERT_FALSE(before.empty()) << cluster.Logs();
  ASSERT_TRUE(cluster.WaitJobFinished(before)) << cluster.Logs();
  // A job running while the backup is taken: the copy is the last commit, consistent.
  const std::string running = cluster.Submit(WriteNoopSpec(cluster, "during-backup", 200, 20));
  ASSERT_FALSE(running.empty()) << cluster.Logs();

  const fs::path backup = cluster.dir() / "backup";
  CommandResult b = RunToEnd({kCoupler, "state", "backup", backup.string(), "--state", cluster.state().string()},
                             cluster.logs(), 120s);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_THAT(b.out, HasSubstr("backed up"));
  EXPECT_EQ(ModeOf(backup), 0700u);
  EXPECT_EQ(ModeOf(backup / "coupler.db"), 0600u);
  EXPECT_EQ(ModeOf(backup / "http-token"), 0600u);
  EXPECT_EQ(ModeOf(backup / "keys" / "coordinator.key"), ModeOf(cluster.state() / "keys" / "coordinator.key"));
  EXPECT_EQ(ModeOf(backup / "keys" / "coordinator.key") & 077, 0u);
  // Into a directory that is not empty: refused, nothing written.
  CommandResult again = RunToEnd({kCoupler, "state", "backup", backup.string(), "--state", cluster.state().string()},
                                 cluster.logs(), 60s);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_THAT(again.err, HasSubstr("is not empty"));

  // After the backup: a job the backup does not hold.
  ASSERT_TRUE(cluster.WaitJobFinished(running, 120s)) << cluster.Logs();
  const std::string after = cluster.Submit(WriteNoopSpec(cluster, "after-backup", 4, 0));
  ASSERT_FALSE(after.empty()) << cluster.Logs();
  ASSERT_TRUE(cluster.WaitJobFinished(after)) << cluster.Logs();

  // The disk is lost: the state moves away, the backup comes back in its place.
  cluster.coordinator().Kill();
  CommandResult over = RunToEnd({kCoupler, "state", "restore", backup.string(), "--state", cluster.state().string()},
                                cluster.logs(), 60s);
  EXPECT_EQ(over.exit_code, 2) << "a restore over a state must be refused";
  EXPECT_THAT(over.err, HasSubstr("already holds a state"));
  fs::rename(cluster.state(), cluster.dir() / "state.lost");
  CommandResult r = RunToEnd({kCoupler, "state", "restore", backup.string(), "--state", cluster.state().string()},
                             cluster.logs(), 120s);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ModeOf(cluster.state() / "coupler.db"), 0600u);
  ASSERT_TRUE(cluster.RestartCoordinator()) << cluster.Logs();

  std::optional<JobView> held = cluster.Job(before);
  ASSERT_TRUE(held) << cluster.Logs();
  EXPECT_EQ(held->state, "succeeded");
  EXPECT_EQ(held->done, 8u);
  EXPECT_FALSE(cluster.Job(after).has_value()) << "a job submitted after the backup came back";
  // The job that ran during the backup resumes and finishes.
  std::optional<JobView> resumed = cluster.WaitJobFinished(running, 120s);
  ASSERT_TRUE(resumed) << cluster.Logs();
  EXPECT_EQ(resumed->state, "succeeded") << resumed->error;
  EXPECT_EQ(resumed->done, 200u);
  // The key set came back with it: the worker, still running on the keys it had, is accepted.
  EXPECT_TRUE(worker.running());
  EXPECT_TRUE(cluster.WaitWorkersAlive(1)) << cluster.Logs();
  const std::string later = cluster.Submit(WriteNoopSpec(cluster, "after-restore", 4, 0));
  ASSERT_FALSE(later.empty()) << cluster.Logs();
  std::optional<JobView> st = cluster.WaitJobFinished(later);
  ASSERT_TRUE(st) << cluster.Logs();
  EXPECT_EQ(st->state, "succeeded");
}

}  // namespace
}  // namespace coupler::itest
