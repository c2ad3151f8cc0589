// A state that lost commits — its WAL deleted after a crash, an older copy of the database put
// back — is refused at open, never started as a shorter state that has forgotten jobs and
// finished tasks it reported.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "coordinator/store/state_store.h"
#include "tests/unit/store_test_util.h"

namespace coupler::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace coupler::store::testing;

// Two jobs checkpointed into the database file (a clean close), two more only in the WAL; then
// the directory as a kill -9 leaves it, copied to `to`, with or without its WAL.
void CrashWithCommitsInTheWal(const TempDir& from, const fs::path& to, bool keep_wal) {
  {
    auto store = OpenOrDie(from.str());
    for (int i = 1; i <= 2; ++i) ASSERT_TRUE(store->PutJob(MakeJob("j-00000" + std::to_string(i))).ok());
  }
  auto store = OpenOrDie(from.str());
  for (int i = 3; i <= 4; ++i) ASSERT_TRUE(store->PutJob(MakeJob("j-00000" + std::to_string(i))).ok());
  ASSERT_GT(fs::file_size(from.path() / "coupler.db-wal"), 0u);
  // The marker is written off the store's caller, a moment after each commit: a crash that
  // comes first leaves it a commit or two behind (a weaker check, never a wrong one).
  store->Settle();
  fs::create_directories(to);
  for (const char* f : {"coupler.db", "coupler.db-wal", "coupler.state"}) {
    if (!keep_wal && std::string(f) == "coupler.db-wal") continue;
    fs::copy_file(from.path() / f, to / f);
  }
}

TEST(LostCommitsTest, ACrashWithItsWalOpensWithEveryJob) {
  TempDir from, to_dir;
  const fs::path to = to_dir.path() / "s";
  CrashWithCommitsInTheWal(from, to, /*keep_wal=*/true);
  auto store = StateStore::Open(to.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->LoadJobs()->size(), 4u);
}

TEST(LostCommitsTest, ADeletedWalIsRefusedNamingTheFilesAndWhatWasLost) {
  TempDir from, to_dir;
  const fs::path to = to_dir.path() / "s";
  CrashWithCommitsInTheWal(from, to, /*keep_wal=*/false);
  auto store = StateStore::Open(to.string());
  ASSERT_FALSE(store.ok()) << "opened with " << (*store)->LoadJobs()->size() << " jobs";
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
  const std::string db = (to / "coupler.db").string();
  EXPECT_THAT(store.status().message(), HasSubstr(db + " (with " + db + "-wal) has lost commits"));
  // Each writer's start is a commit too: 1 + 2 jobs checkpointed at close, then 1 + 2 in the WAL.
  EXPECT_THAT(store.status().message(),
              HasSubstr("generation 6 recorded in " + (to / "coupler.state").string() + ", 3 found"));
  EXPECT_THAT(store.status().message(), HasSubstr("Restore the state directory from a backup"));
  EXPECT_THAT(store.status().message(), HasSubstr("--accept-state-loss"));
  EXPECT_EQ(store.status().message().find('\n'), std::string::npos) << "one line";
}

TEST(LostCommitsTest, AnOlderCopyOfTheDatabasePutBackIsRefused) {
  TempDir dir, backup;
  {
    auto store = OpenOrDie(dir.str());
    ASSERT_TRUE(store->PutJob(MakeJob("j-000001")).ok());
  }
  fs::copy_file(dir.path() / "coupler.db", backup.path() / "coupler.db");
  {
    auto store = OpenOrDie(dir.str());
    ASSERT_TRUE(store->PutJob(MakeJob("j-000002")).ok());
  }
  fs::copy_file(backup.path() / "coupler.db", dir.path() / "coupler.db",
                fs::copy_options::overwrite_existing);
  auto store = StateStore::Open(dir.str());
  ASSERT_FALSE(store.ok());
  // Two starts and two jobs recorded; the copy holds the first start and its job.
  EXPECT_THAT(store.status().message(), HasSubstr("generation 4 recorded"));
  EXPECT_THAT(store.status().message(), HasSubstr("2 found"));
}

}  // namespace
}  // namespace coupler::store
