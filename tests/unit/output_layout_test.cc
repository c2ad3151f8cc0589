#include "runtime/io/output_layout.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/io/atomic_file.h"
#include "runtime/job/task_logs.h"

namespace coupler::io {
namespace {

TEST(OutputLayoutTest, NamesNodeFoldersAndShards) {
  EXPECT_EQ(NodeDir("/w/job", "stats"), "/w/job/stats");
  EXPECT_EQ(ShardFileName(4), "part-00004.npz");
  EXPECT_EQ(ShardFileName(1, ShardKind::kPartial), "partial-00001.npz");
  EXPECT_EQ(ShardFileName(123456), "part-123456.npz");
  EXPECT_EQ(ShardFileName(4, ShardKind::kPart, ShardFormat::kRecords), "part-00004.npy");
  EXPECT_EQ(ShardPath("/w/job", "eval", 0), "/w/job/eval/part-00000.npz");
  EXPECT_EQ(ShardPath("/w", "eval", 1, ShardKind::kPartial), "/w/eval/partial-00001.npz");
}

// The names are made by hand (they are made for every task): what printf's formats made, for
// every width a number can take, negative and past the padding included.
TEST(OutputLayoutTest, NamesAreWhatPrintfsFormatsMade) {
  std::vector<int64_t> values = {0, 1, -1, 9, 10, 99999, 100000, 123456789, -99999, -100000,
                                 INT64_MAX, INT64_MIN};
  for (int64_t v = 1; v < INT64_MAX / 10; v *= 10) {
    values.push_back(v - 1);
    values.push_back(v);
    values.push_back(-v);
  }
  char want[96];
  for (const int64_t v : values) {
    std::snprintf(want, sizeof(want), "%s-%05lld.%s", "partial", static_cast<long long>(v), "npz");
    EXPECT_EQ(ShardFileName(v, ShardKind::kPartial, ShardFormat::kColumns), want) << v;
    std::snprintf(want, sizeof(want), "/w/n/%s-%05lld.%s", "part", static_cast<long long>(v), "npy");
    EXPECT_EQ(ShardPath("/w", "n", v, ShardKind::kPart, ShardFormat::kRecords), want) << v;
    std::snprintf(want, sizeof(want), "/w/n/shuffle/map-%05lld", static_cast<long long>(v));
    EXPECT_EQ(ShufflePrefix("/w", "n", v), want) << v;
    std::snprintf(want, sizeof(want), "pre.p%05lld.npz", static_cast<long long>(v));
    EXPECT_EQ(ShufflePartitionPath("pre", v), want) << v;
    if (v < 0) continue;
    const auto task = static_cast<uint64_t>(v);
    for (const uint32_t attempt : {0u, 7u, 4294967295u}) {
      std::snprintf(want, sizeof(want), "task-%06llu.attempt-%u.stdout",
                    static_cast<unsigned long long>(task), attempt);
      EXPECT_EQ(job::TaskLogFileName(task, attempt, "stdout"), want) << v;
      EXPECT_EQ(job::TaskLogPath("/w", "n", task, attempt, "stdout"), std::string("/w/n/logs/") + want)
          << v;
    }
  }
  std::snprintf(want, sizeof(want), "task-%06llu.attempt-%u.ranks", 18446744073709551615ull, 1u);
  EXPECT_EQ(job::TaskLogFileName(18446744073709551615ull, 1, "ranks"), want);
}

TEST(OutputLayoutTest, ItsShardNamesAreShards) {
  EXPECT_TRUE(IsShardFileName(ShardFileName(7)));
  EXPECT_TRUE(IsShardFileName(ShardFileName(7, ShardKind::kPartial)));
  EXPECT_TRUE(IsShardFileName(ShardFileName(7, ShardKind::kPart, ShardFormat::kRecords)));
}

TEST(ShardFileNameTest, SkipsHiddenAndUnfinishedWrites) {
  EXPECT_TRUE(IsShardFileName("part-00004.npy"));
  EXPECT_TRUE(IsShardFileName("part-00004.npz"));
  EXPECT_FALSE(IsShardFileName("part-00004.npz.tmp.5471.280efdc67caaec13.npz"));
  EXPECT_FALSE(IsShardFileName("part-00004.npy.tmp.5471.280efdc67caaec13.npy"));
  EXPECT_FALSE(IsShardFileName("part-00004.npy.tmp.5471.280efdc67caaec13"));
  EXPECT_FALSE(IsShardFileName(".part-00004.npy"));
  EXPECT_FALSE(IsShardFileName("notes.txt"));
  EXPECT_FALSE(IsShardFileName(".npy"));
}

TEST(OutputLayoutTest, RecognizesTheTemporariesAtomicWritesUse) {
  const std::string temp = TempPathFor("part-00002.npy", /*keep_extension=*/true);
  EXPECT_TRUE(IsTempFileName(temp));
  EXPECT_FALSE(IsShardFileName(temp));
  EXPECT_FALSE(IsTempFileName("part-00002.npy"));
  EXPECT_EQ(TempWriterPid("part-00002.npy", temp), static_cast<long>(::getpid()));
}

TEST(OutputLayoutTest, TempWriterPidOnlyForTemporariesOfThatFile) {
  EXPECT_EQ(TempWriterPid("part-00001.npy", "part-00001.npy.tmp.5471.280efdc67caaec13"), 5471);
  EXPECT_EQ(TempWriterPid("part-00001.npy", "part-00001.npy.tmp.5471.abc.npy"), 5471);
  EXPECT_EQ(TempWriterPid("part-00001.npy", "part-00002.npy.tmp.5471.abc"), std::nullopt);
  EXPECT_EQ(TempWriterPid("part-00001.npy", "part-00001.npy"), std::nullopt);
  EXPECT_EQ(TempWriterPid("part-00001.npy", "part-00001.npy.tmp."), std::nullopt);
  EXPECT_EQ(TempWriterPid("part-00001.npy", "part-00001.npy.tmp.x1.abc"), std::nullopt);
  EXPECT_EQ(TempWriterPid("part-00001.npy", "part-00001.npy.tmp.0.abc"), std::nullopt);
}

}  // namespace
}  // namespace coupler::io
