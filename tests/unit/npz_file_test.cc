// The .npz shard: every column type round trips; a column left unread is passed on byte for
// byte; what numpy would refuse or what coupler cannot read (compressed members, a truncated
// file, a 2-D member) is refused with the file and the member named. numpy reading the files
// is tested from Python (tests/python/test_csv_pipeline.py, test_real_table.py).
#include "runtime/io/npz_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

Table EveryType() {
  Table t;
  EXPECT_TRUE(t.AddColumn(Column::Float32("f", {1.5f, -2.0f, 0.0f})).ok());
  EXPECT_TRUE(t.AddColumn(Column::Int64("id", {16777217, -1, 1ll << 40})).ok());
  EXPECT_TRUE(t.AddColumn(Column("ts", std::vector<int64_t>{0, 1, 2}, ElementType::kDatetime64)).ok());
  EXPECT_TRUE(t.AddColumn(Column("ok", std::vector<uint8_t>{1, 0, 1}, ElementType::kBool)).ok());
  EXPECT_TRUE(t.AddColumn(Column::Float64("d", {0.25, 1e300, -3})).ok());
  EXPECT_TRUE(t.AddColumn(Column("h", std::vector<uint16_t>{1, 2, 3}, ElementType::kBFloat16)).ok());
  Column city = Column::Int32("city", {0, -1, 1});
  city.set_dictionary(std::make_shared<const Column::Dictionary>(Column::Dictionary{"a", "b"}));
  EXPECT_TRUE(t.AddColumn(std::move(city)).ok());
  EXPECT_TRUE(t.AddColumn(Column::Int32("n/with space", {7, 8, 9})).ok());
  return t;
}

TEST(NpzFileTest, EveryColumnTypeRoundTripsInColumnOrder) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("part-00000.npz");
  uint64_t written = 0;
  ASSERT_TRUE(WriteNpzAtomic(path, EveryType(), &written).ok());
  EXPECT_EQ(written, fs::file_size(path));
  uint64_t read = 0;
  auto back = ReadNpz(path, {}, &read);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Describe(), EveryType().Describe());
  EXPECT_THAT(back->Find("id")->values<int64_t>(), ElementsAre(16777217, -1, 1ll << 40));
  EXPECT_THAT(back->Find("d")->values<double>(), ElementsAre(0.25, 1e300, -3));
  EXPECT_THAT(back->Find("ok")->values<uint8_t>(), ElementsAre(1, 0, 1));
  EXPECT_THAT(*back->Find("city")->dictionary(), ElementsAre("a", "b"));
  EXPECT_THAT(back->Find("n/with space")->values<int32_t>(), ElementsAre(7, 8, 9));
  EXPECT_FALSE(back->Find("n/with space")->categorical());
  EXPECT_GT(read, 0u);
  EXPECT_LT(read, written);  // the zip headers are not counted as read
}

TEST(NpzFileTest, UnreadColumnsArePassedOnByteForByte) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("in.npz");
  ASSERT_TRUE(WriteNpzAtomic(path, EveryType()).ok());
  uint64_t read = 0;
  auto partial = ReadNpz(path, [](const ColumnInfo& c) { return c.name == "f"; }, &read);
  ASSERT_TRUE(partial.ok()) << partial.status().ToString();
  EXPECT_TRUE(partial->Find("f")->loaded());
  EXPECT_FALSE(partial->Find("id")->loaded());
  EXPECT_EQ(partial->rows(), 3u);
  uint64_t whole = 0;
  ASSERT_TRUE(ReadNpz(path, {}, &whole).ok());
  EXPECT_EQ(whole - read, 3 * (8 + 8 + 1 + 8 + 2 + 4 + 4) + 11);  // the others, ["a", "b"]\n
  EXPECT_GT(read, 3 * sizeof(float));  // f's values, and every column's .npy header
  // Unchanged: the same file. The source may be replaced meanwhile (an upstream retry renames
  // over it): the descriptor opened at read time still reads the original bytes.
  const std::string original = Slurp(path);
  ASSERT_TRUE(WriteNpzAtomic(path, Table()).code() == StatusCode::kInvalidArgument);
  Table other;
  ASSERT_TRUE(other.AddColumn(Column::Float32("z", {9})).ok());
  ASSERT_TRUE(WriteNpzAtomic(path, other).ok());
  ASSERT_TRUE(WriteNpzAtomic(dir->File("out.npz"), *partial).ok());
  EXPECT_EQ(Slurp(dir->File("out.npz")), original);
  // Changed, renamed and dropped columns around the passed-on ones.
  partial->Find("f")->values<float>()[0] = 4.0f;
  partial->Find("id")->set_name("user_id");
  ASSERT_TRUE(WriteNpzAtomic(dir->File("out2.npz"), *partial).ok());
  auto back = ReadNpz(dir->File("out2.npz"), {});
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_THAT(back->Find("f")->values<float>(), ElementsAre(4.0f, -2.0f, 0.0f));
  EXPECT_THAT(back->Find("user_id")->values<int64_t>(), ElementsAre(16777217, -1, 1ll << 40));
  EXPECT_THAT(*back->Find("city")->dictionary(), ElementsAre("a", "b"));
}

// A sort's reduce reads only its range of a big shard's other columns.
TEST(NpzFileTest, ARangeOfAnUnreadColumnIsReadAlone) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("in.npz");
  ASSERT_TRUE(WriteNpzAtomic(path, EveryType()).ok());
  auto unread = ReadNpz(path, [](const ColumnInfo&) { return false; });
  ASSERT_TRUE(unread.ok()) << unread.status().ToString();
  uint64_t read = 0;
  auto id = ReadStoredRows(*unread->Find("id"), 1, 3, &read);
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_THAT(std::vector<int64_t>(id->values<int64_t>().begin(), id->values<int64_t>().end()),
              ElementsAre(-1, 1ll << 40));
  EXPECT_EQ(read, 2 * sizeof(int64_t));
  auto city = ReadStoredRows(*unread->Find("city"), 2, 3, &read);
  ASSERT_TRUE(city.ok()) << city.status().ToString();
  EXPECT_EQ(city->values<int32_t>()[0], 1);
  EXPECT_EQ(city->dictionary()->at(1), "b") << "the whole dictionary comes with any range";
  auto none = ReadStoredRows(*unread->Find("d"), 2, 2, &read);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->size(), 0u);
  EXPECT_FALSE(unread->Find("id")->loaded()) << "the column itself stays unread";
}

TEST(NpzFileTest, WhatIsNotAShardIsRefusedNamingTheMember) {
  auto dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("in.npz");
  ASSERT_TRUE(WriteNpzAtomic(path, EveryType()).ok());
  const std::string good = Slurp(path);

  // Truncated: the end record is gone.
  Spit(path, good.substr(0, good.size() / 2));
  EXPECT_THAT(ReadNpz(path, {}).status().message(), HasSubstr("no end of central directory"));

  // A member compressed (method 8 in the central directory entry of the first member).
  std::string compressed = good;
  const size_t central = compressed.find(std::string("PK\x01\x02", 4));
  ASSERT_NE(central, std::string::npos);
  compressed[central + 10] = 8;
  Spit(path, compressed);
  EXPECT_THAT(ReadNpz(path, {}).status().message(),
              HasSubstr("member 'f.npy' is compressed: shards are stored members"));

  // A member that is not a column.
  std::string renamed = good;
  for (size_t at = 0; (at = renamed.find("f.npy", at)) != std::string::npos; ++at) renamed[at + 2] = 'x';
  Spit(path, renamed);
  EXPECT_THAT(ReadNpz(path, {}).status().message(), HasSubstr("member 'f.xpy' is not a column"));

  // Columns of different lengths.
  Table a;
  ASSERT_TRUE(a.AddColumn(Column::Float32("x", {1, 2})).ok());
  ASSERT_TRUE(WriteNpzAtomic(path, a).ok());
  std::string uneven = Slurp(path);
  const size_t shape = uneven.find("'shape': (2,)");
  ASSERT_NE(shape, std::string::npos);
  uneven[shape + 10] = '1';
  Spit(path, uneven);
  EXPECT_THAT(ReadNpz(path, {}).status().message(), HasSubstr("member 'x.npy'"));

  Spit(path, "not a zip at all, just text that is long enough");
  EXPECT_THAT(ReadNpz(path, {}).status().message(), HasSubstr("not a zip archive"));
  EXPECT_EQ(ReadNpz(dir->File("absent.npz"), {}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace coupler::io
