// What a succeeded node's outputs are, for --reuse (coordinator/reuse_index.h): its files,
// not its printed logs nor a writer's unfinished temporary; and a node that wrote nothing (no
// folder at all: noop, an exec with no outputs) has none, which is not an error to warn about.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/reuse_index.h"
#include "runtime/io/temp_dir.h"

namespace coupler::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;

TEST(NodeOutputsTest, ANodeThatWroteNothingHasNoOutputs) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  auto listed = ListNodeOutputs(dir->path() + "/runs/j-000001", "n");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_TRUE(listed->empty());
}

TEST(NodeOutputsTest, FilesCountLogsAndTemporariesDoNot) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string node = dir->path() + "/n";
  std::filesystem::create_directories(node + "/logs");
  std::ofstream(node + "/part-00000.npy") << "abc";
  std::ofstream(node + "/logs/task-000000.attempt-0.stdout") << "printed";
  std::ofstream(node + "/part-00001.npy.tmp.123.abcdef") << "half";
  auto listed = ListNodeOutputs(dir->path(), "n");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].path, "part-00000.npy");
  EXPECT_EQ((*listed)[0].bytes, 3u);
}

}  // namespace
}  // namespace coupler::coordinator
