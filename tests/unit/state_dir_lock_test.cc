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

}  // namespace
}  // namespace coupler::store
