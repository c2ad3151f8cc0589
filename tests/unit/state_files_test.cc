// A state directory whose database or WAL was lost or damaged is refused, never opened as an
// empty (or shorter) state that has forgotten what it reported finished.
#include "coordinator/store/state_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "coordinator/store/state_store.h"
#include "tests/unit/store_test_util.h"

namespace coupler::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace coupler::store::testing;

// A copy of `dir` as a kill -9 leaves it: taken while the store is open, so the last commits
// are only in the WAL.
void CrashCopy(const TempDir& from, const fs::path& to, int jobs) {
  auto store = OpenOrDie(from.str());
  for (int i = 0; i < jobs; ++i) ASSERT_TRUE(store->PutJob(MakeJob("j-" + std::to_string(100 + i))).ok());
  fs::create_directories(to);
  for (const char* f : {"coupler.db", "coupler.db-wal", kStateMarker}) {
    ASSERT_TRUE(fs::exists(from.path() / f)) << f;
    fs::copy_file(from.path() / f, to / f);
  }
}

void Poke(const fs::path& file, size_t offset, char byte) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(byte);
}

TEST(StateFilesTest, AFreshDirectoryStartsEmptyAndIsMarked) {
  TempDir dir;
  EXPECT_TRUE(CheckStateFiles(dir.str(), "coupler.db").ok());
  OpenOrDie(dir.str());
  EXPECT_TRUE(fs::exists(dir.path() / kStateMarker));
}

TEST(StateFilesTest, AnEmptyOrMissingDatabaseWhereStateExistedIsRefused) {
  TempDir dir;
  { OpenOrDie(dir.str())->PutJob(MakeJob("j-000001")).ok(); }
  fs::resize_file(dir.path() / "coupler.db", 0);
  auto empty = StateStore::Open(dir.str());
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(), HasSubstr("is empty (0 bytes)"));
  EXPECT_THAT(empty.status().message(), HasSubstr("held coupler state"));
  fs::remove(dir.path() / "coupler.db");
  auto missing = StateStore::Open(dir.str());
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("is missing"));
  // Nothing was created meanwhile: the evidence stays as it was.
  EXPECT_FALSE(fs::exists(dir.path() / "coupler.db"));
}

TEST(StateFilesTest, ADatabaseWithoutItsHeaderIsRefused) {
  TempDir dir;
  { OpenOrDie(dir.str())->PutJob(MakeJob("j-000001")).ok(); }
  for (size_t i = 0; i < 16; ++i) Poke(dir.path() / "coupler.db", i, '\0');
  auto opened = StateStore::Open(dir.str());
  ASSERT_FALSE(opened.ok());
  EXPECT_THAT(opened.status().message(), HasSubstr("no SQLite header"));
}

TEST(StateFilesTest, ASoundWalAfterACrashOpensWithEveryCommit) {
  TempDir from;
  TempDir to_dir;
  const fs::path to = to_dir.path() / "s";
  CrashCopy(from, to, 5);
  EXPECT_TRUE(CheckWal((to / "coupler.db-wal").string()).ok());
  auto store = StateStore::Open(to.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->LoadJobs()->size(), 5u);
}

TEST(StateFilesTest, AWalWithADamagedHeaderIsRefused) {
  TempDir from;
  TempDir to_dir;
  const fs::path to = to_dir.path() / "s";
  CrashCopy(from, to, 5);
  Poke(to / "coupler.db-wal", 13, '\x7f');  // the checkpoint sequence, under the header checksum
  auto store = StateStore::Open(to.string());
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr("header fails its checksum"));
}

TEST(StateFilesTest, AWalWithADamagedMiddleFrameIsRefusedButATornLastFrameIsNot) {
  TempDir from;
  TempDir to_dir;
  const fs::path to = to_dir.path() / "s";
  CrashCopy(from, to, 8);
  const fs::path wal = to / "coupler.db-wal";
  const uintmax_t size = fs::file_size(wal);
  // The page size is in the header (big-endian at offset 8).
  std::ifstream in(wal, std::ios::binary);
  unsigned char h[12];
  in.read(reinterpret_cast<char*>(h), 12);
  const size_t page = (size_t{h[8]} << 24) | (size_t{h[9]} << 16) | (size_t{h[10]} << 8) | h[11];
  const size_t frame = 24 + page;
  const size_t frames = (size - 32) / frame;
  ASSERT_GE(frames, 3u);

  // The last frame torn: what a crash mid-write leaves. SQLite never committed it.
  fs::copy_file(wal, to_dir.path() / "wal.bak");
  Poke(wal, 32 + (frames - 1) * frame + 24 + 100, '\x55');
  EXPECT_TRUE(CheckWal(wal.string()).ok());

  // A frame in the middle damaged: SQLite would drop every commit after it.
  fs::copy_file(to_dir.path() / "wal.bak", wal, fs::copy_options::overwrite_existing);
  Poke(wal, 32 + 1 * frame + 24 + 100, '\x55');
  auto store = StateStore::Open(to.string());
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr("a frame fails its checksum with later frames"));
}

}  // namespace
}  // namespace coupler::store
