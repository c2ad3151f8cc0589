#include "runtime/io/output_layout.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include "runtime/io/atomic_file.h"

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
