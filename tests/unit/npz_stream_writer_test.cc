// A shard written a batch at a time is the file WriteNpzAtomic writes for the batches
// concatenated, byte for byte: every column type, categorical codes rewritten into one
// dictionary of the strings rows use, missing values kept; nothing appears at the path until
// Finish, and the spool files vanish with the writer; a batch of other columns is refused.
#include "runtime/io/npz_stream_writer.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/npz_file.h"
#include "runtime/io/temp_dir.h"

namespace coupler::io {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Column Strings(std::string name, std::vector<int32_t> codes, Column::Dictionary dictionary) {
  Column c = Column::Int32(std::move(name), std::move(codes));
  c.set_dictionary(std::make_shared<const Column::Dictionary>(std::move(dictionary)));
  return c;
}

Table Batch(std::vector<int64_t> ids, std::vector<double> values, Column city) {
  Table t;
  EXPECT_TRUE(t.AddColumn(Column::Int64("id", std::move(ids))).ok());
  EXPECT_TRUE(t.AddColumn(Column::Float64("x", std::move(values))).ok());
  EXPECT_TRUE(t.AddColumn(std::move(city)).ok());
  EXPECT_TRUE(t.AddColumn(Column("ok", std::vector<uint8_t>(t.rows(), 1), ElementType::kBool)).ok());
  return t;
}

TEST(NpzStreamWriterTest, BatchesMakeTheFileOneWriteOfTheirConcatenationMakes) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string streamed = dir->File("part-00000.npz");
  {
    NpzStreamWriter writer(streamed);
    // Each batch's own dictionary, in another order and with a string no row uses.
    ASSERT_TRUE(writer.Append(Batch({1, 2, 3}, {0.5, -1, 2}, Strings("city", {1, -1, 1}, {"unused", "Oslo"}))).ok());
    ASSERT_TRUE(writer.Append(Batch({}, {}, Strings("city", {}, {"Lima"}))).ok());
    ASSERT_TRUE(writer.Append(Batch({4, 1ll << 53}, {3, 4}, Strings("city", {0, 1}, {"Lima", "Oslo"}))).ok());
    EXPECT_EQ(writer.rows(), 5u);
    EXPECT_FALSE(fs::exists(streamed)) << "a part file before it is whole";
    uint64_t bytes = 0;
    ASSERT_TRUE(writer.Finish(&bytes).ok());
    EXPECT_EQ(bytes, fs::file_size(streamed));
  }
  // The spool files went with the writer: the folder holds the shard alone.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir->path()), fs::directory_iterator()), 1);

  const std::string whole = dir->File("whole.npz");
  ASSERT_TRUE(WriteNpzAtomic(whole, Batch({1, 2, 3, 4, 1ll << 53}, {0.5, -1, 2, 3, 4},
                                          Strings("city", {0, -1, 0, 1, 0}, {"Oslo", "Lima"})))
                  .ok());
  EXPECT_EQ(Slurp(streamed), Slurp(whole));
  auto back = ReadNpz(streamed, {});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_THAT(back->column(0).values<int64_t>(), ElementsAre(1, 2, 3, 4, 1ll << 53));
  EXPECT_THAT(*back->column(2).dictionary(), ElementsAre("Oslo", "Lima"));
}

TEST(NpzStreamWriterTest, ABatchOfOtherColumnsOrNoBatchAtAllIsRefused) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  NpzStreamWriter none(dir->File("none.npz"));
  EXPECT_THAT(none.Finish().message(), HasSubstr("no batch"));

  NpzStreamWriter writer(dir->File("part.npz"));
  ASSERT_TRUE(writer.Append(Batch({1}, {1}, Strings("city", {0}, {"Oslo"}))).ok());
  Table other;
  ASSERT_TRUE(other.AddColumn(Column::Int64("id", {2})).ok());
  ASSERT_TRUE(other.AddColumn(Column::Float32("x", {2})).ok());
  ASSERT_TRUE(other.AddColumn(Column::Int32("city", {0})).ok());
  ASSERT_TRUE(other.AddColumn(Column("ok", std::vector<uint8_t>{1}, ElementType::kBool)).ok());
  const Status refused = writer.Append(other);
  EXPECT_THAT(refused.message(), HasSubstr("'x' (float32)"));
  EXPECT_THAT(refused.message(), HasSubstr("after batches with 'x' (float64)"));
}

}  // namespace
}  // namespace coupler::io
