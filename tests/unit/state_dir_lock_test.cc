// One writer per state directory: a second StateStore writer (a second coordinator) is refused
// with the holder's name; readers are not; the lock goes with its holder, even a killed one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "coordinator/store/state_dir_lock.h"
#include "coordinator/store/state_store.h"
#include "tests/unit/store_test_util.h"

namespace coupler::store {
namespace {

using ::testing::HasSubstr;
using namespace coupler::store::testing;

TEST(StateDirLockTest, ASecondWriterIsRefusedNamingTheHolder) {
  TempDir dir;
  auto first = OpenOrDie(dir.str());
  auto second = StateStore::Open(dir.str(), OpenMode::kReadWrite);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("is in use by another coordinator"));
  EXPECT_THAT(second.status().message(), HasSubstr("pid " + std::to_string(::getpid()) + " on "));
  EXPECT_THAT(second.status().message(), HasSubstr(" since 20"));
  EXPECT_THAT(second.status().message(), HasSubstr("coordinator.lock"));
  // Status tools read while the coordinator writes: they take no lock.
  EXPECT_TRUE(StateStore::Open(dir.str(), OpenMode::kReadOnly).ok());
  first.reset();
  EXPECT_TRUE(StateStore::Open(dir.str(), OpenMode::kReadWrite).ok()) << "released with the store";
}

TEST(StateDirLockTest, AKilledHoldersLockIsGoneAndItsFileBlocksNothing) {
  TempDir dir;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = StateDirLock::Acquire(dir.str());
    const char byte = lock.ok() ? '1' : '0';
    (void)!::write(ready[1], &byte, 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(byte, '1');
  auto refused = StateDirLock::Acquire(dir.str());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("pid " + std::to_string(child) + " on "));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // The file is still there, with the dead holder's name in it; the lock is not.
  ASSERT_TRUE(fs::exists(dir.path() / StateDirLock::kFileName));
  auto taken = StateDirLock::Acquire(dir.str());
  ASSERT_TRUE(taken.ok()) << taken.status().ToString();
  std::ifstream in(dir.path() / StateDirLock::kFileName);
  std::string line;
  std::getline(in, line);
  EXPECT_THAT(line, HasSubstr("pid " + std::to_string(::getpid()) + " on "));
}

TEST(StateDirLockTest, AHolderNameIsShownOnOneLineWhateverTheFileHolds) {
  TempDir dir;
  auto held = StateDirLock::Acquire(dir.str());
  ASSERT_TRUE(held.ok());
  {
    std::ofstream out(dir.path() / StateDirLock::kFileName, std::ios::trunc);
    out << "pid 1\x1b[2J on\rhost\nsecond line";
  }
  auto refused = StateDirLock::Acquire(dir.str());
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("(pid 1?[2J on?host, lock "));
  EXPECT_THAT(refused.status().message(), ::testing::Not(HasSubstr("second line")));
}

// The lock taken over behind a writer's back (its file deleted, so a second writer locked a
// new one): the second writer's start moved the generation, so every write of the first is
// refused whole, with the reason, and the second writes on.
TEST(StateDirLockTest, AWriterWhoseLockWasTakenOverIsFencedAndWritesNothing) {
  TempDir dir;
  auto old_owner = OpenOrDie(dir.str());
  ASSERT_TRUE(old_owner->PutJob(MakeJob("j-1")).ok());
  fs::remove(dir.path() / StateDirLock::kFileName);
  auto new_owner = OpenOrDie(dir.str());

  old_owner->AddCommit(MakeCommit("j-1", 0, 1));
  const Status refused = old_owner->Flush();
  EXPECT_EQ(refused.code(), StatusCode::kAborted);
  EXPECT_THAT(refused.message(), HasSubstr("fenced: another coordinator has written"));
  EXPECT_TRUE(old_owner->fenced());
  EXPECT_EQ(old_owner->PutJob(MakeJob("j-2")).code(), StatusCode::kAborted);
  EXPECT_EQ(old_owner->SetJobState("j-1", "failed", "x", 1).code(), StatusCode::kAborted);

  new_owner->AddCommit(MakeCommit("j-1", 1, 1));
  ASSERT_TRUE(new_owner->Flush().ok());
  EXPECT_FALSE(new_owner->fenced());
  auto commits = new_owner->LoadCommits("j-1");
  ASSERT_TRUE(commits.ok());
  ASSERT_EQ(commits->size(), 1u) << "only the new owner's commit";
  EXPECT_EQ((*commits)[0].task_id, 1u);
  auto jobs = new_owner->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].state, MakeJob("j-1").state);
}

}  // namespace
}  // namespace coupler::store
