// Categorical columns' dictionaries: the JSON's escaping of any byte string, its round trip
// through WriteShard/ReadShard as a member of the .npz (so every op that keeps a column keeps
// its strings, loaded or not), and the sidecar beside an .npy of records.
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/dictionary_file.h"
#include "runtime/io/npy_writer.h"
#include "runtime/io/temp_dir.h"
#include "worker/ops/shard_io.h"

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

io::Table CategoricalTable(std::vector<std::string> dictionary, std::vector<int32_t> codes) {
  io::Table table;
  std::vector<float> x(codes.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) + 0.5f;
  io::Column city = io::Column::Int32("city", std::move(codes));
  city.set_dictionary(std::make_shared<const io::Column::Dictionary>(std::move(dictionary)));
  EXPECT_TRUE(table.AddColumn(std::move(city)).ok());
  EXPECT_TRUE(table.AddColumn(io::Column::Float32("x", std::move(x))).ok());
  return table;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every kind of byte string: quotes, backslashes, control bytes, multi-byte UTF-8, bytes that
// are not UTF-8 (a lone lead byte, 0xFF, an overlong '/', an encoded surrogate), and "".
const std::vector<std::string> kNasty = {
    "plain",      "with \"quotes\"", "back\\slash", "tab\there\nnewline\x01", "caf\xC3\xA9",
    "\xF0\x9F\x98\x80", "lone \xC3", "\xFF\xFE",  "\xC0\xAF",                "\xED\xA0\x80",
    "",           "\x7F"};

TEST(DictionaryFileTest, AnyByteStringRoundTripsAndTheTextIsPlainJson) {
  std::vector<int32_t> codes;
  for (size_t i = 0; i < kNasty.size(); ++i) codes.push_back(static_cast<int32_t>(i));
  codes.push_back(-1);
  const io::Table table = CategoricalTable(kNasty, codes);
  const std::string json = io::EncodeDictionaries(table);
  // Valid UTF-8 stays as is; the other bytes are surrogateescape'd; controls are \u escapes.
  EXPECT_THAT(json, HasSubstr("\"caf\xC3\xA9\""));
  EXPECT_THAT(json, HasSubstr("\"with \\\"quotes\\\"\""));
  EXPECT_THAT(json, HasSubstr("\"back\\\\slash\""));
  EXPECT_THAT(json, HasSubstr("\"tab\\u0009here\\u000anewline\\u0001\""));
  EXPECT_THAT(json, HasSubstr("\"lone \\udcc3\""));
  EXPECT_THAT(json, HasSubstr("\"\\udcff\\udcfe\""));
  EXPECT_THAT(json, HasSubstr("\"\\udcc0\\udcaf\""));
  EXPECT_THAT(json, HasSubstr("\"\\udced\\udca0\\udc80\""));
  for (const char c : json) {
    EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << static_cast<int>(c);
  }
  auto decoded = io::DecodeDictionaries(json);
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->size(), 1u);
  EXPECT_EQ((*decoded)[0].first, "city");
  EXPECT_EQ((*decoded)[0].second, kNasty);
}

TEST(DictionaryFileTest, DecodeAcceptsOtherWritersAndRefusesNonsense) {
  auto other = io::DecodeDictionaries(
      R"({ "a" : [ "x", "\u00e9\ud83d\ude00\/" ] , "b": [] })");
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_THAT((*other)[0].second, ElementsAre("x", "\xC3\xA9\xF0\x9F\x98\x80/"));
  EXPECT_TRUE((*other)[1].second.empty());
  auto none = io::DecodeDictionaries(" {} ");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  for (const char* bad : {"", "[]", "{\"a\": [1]}", "{\"a\": [\"x\"]", "{\"a\": [\"x\"]} x",
                          "{\"a\": [], \"a\": []}", "{\"a\": [\"\\ud800\"]}", "{\"a\": [\"\\q\"]}"}) {
    EXPECT_FALSE(io::DecodeDictionaries(bad).ok()) << bad;
  }
}

TEST(ShardDictionaryTest, WriteShardAndReadShardKeepTheDictionary) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("part-00000.npz");
  OpReport report;
  ASSERT_TRUE(WriteShard(path, CategoricalTable({"Paris", "Lyon"}, {1, -1, 0, 1}), report).ok());
  EXPECT_FALSE(fs::exists(path + ".dict.json"));  // the dictionary is a member of the archive
  EXPECT_THAT(Slurp(path), HasSubstr("city.dictionary.json[\"Paris\", \"Lyon\"]\n"));
  EXPECT_EQ(report.output_paths, std::vector<std::string>{path});

  auto back = ReadShard(path, report);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  const io::Column* city = back->Find("city");
  ASSERT_NE(city, nullptr);
  ASSERT_TRUE(city->categorical());
  EXPECT_THAT(*city->dictionary(), ElementsAre("Paris", "Lyon"));
  EXPECT_THAT(city->values<int32_t>(), ElementsAre(1, -1, 0, 1));
  EXPECT_FALSE(back->Find("x")->categorical());

  // What an op that passes the column through writes keeps the strings too.
  const std::string next = dir->File("next.npz");
  ASSERT_TRUE(WriteShard(next, std::move(*back), report).ok());
  auto again = ReadShard(next, report);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_THAT(*again->Find("city")->dictionary(), ElementsAre("Paris", "Lyon"));
}

// An op that does not load a categorical column (it is Stored) passes on its codes and its
// dictionary as they are: the column is categorical still, and the bytes are the same.
TEST(ShardDictionaryTest, AColumnLeftUnreadKeepsItsDictionary) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("part-00000.npz");
  OpReport report;
  ASSERT_TRUE(WriteShard(path, CategoricalTable({"Paris", "Lyon"}, {1, -1, 0, 1}), report).ok());
  OpReport read;
  auto only_x = ReadShard(path, read, [](const io::ColumnInfo& c) { return c.name == "x"; });
  ASSERT_TRUE(only_x.ok()) << only_x.status().ToString();
  const io::Column* city = only_x->Find("city");
  ASSERT_NE(city, nullptr);
  EXPECT_FALSE(city->loaded());
  EXPECT_TRUE(city->categorical());
  EXPECT_EQ(city->dictionary(), nullptr);  // still in the file
  EXPECT_EQ(only_x->rows(), 4u);
  EXPECT_LT(read.bytes_read, fs::file_size(path));  // the codes and strings were not read
  ASSERT_TRUE(WriteShard(dir->File("next.npz"), std::move(*only_x), report).ok());
  EXPECT_EQ(Slurp(dir->File("next.npz")), Slurp(path));
  auto back = ReadShard(dir->File("next.npz"), report);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_THAT(*back->Find("city")->dictionary(), ElementsAre("Paris", "Lyon"));
  EXPECT_THAT(back->Find("city")->values<int32_t>(), ElementsAre(1, -1, 0, 1));
}

TEST(ShardDictionaryTest, AnEmptyDictionaryRoundTrips) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("part-00003.npz");
  OpReport report;
  ASSERT_TRUE(WriteShard(path, CategoricalTable({}, {-1, -1}), report).ok());
  auto back = ReadShard(path, report);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->Find("city")->categorical());
  EXPECT_TRUE(back->Find("city")->dictionary()->empty());
}

// A dictionary member that does not fit its codes (a hand edit, another writer) is refused
// rather than mapping codes to the wrong strings.
TEST(ShardDictionaryTest, CodesPastTheDictionaryAreRefused) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("part-00002.npz");
  OpReport report;
  ASSERT_TRUE(WriteShard(path, CategoricalTable({"a"}, {2, 0, 0}), report).ok());
  auto read = ReadShard(path, report);
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(),
              HasSubstr("column 'city' holds code 2 but its dictionary has 1 entries"));
  EXPECT_THAT(read.status().message(), HasSubstr("city.dictionary.json"));
}

// An .npy of records (what np.save writes in an exec command, or an earlier release wrote) is
// read with the sidecar beside it; a sidecar that does not belong to it is refused.
TEST(ShardDictionaryTest, AnNpyOfRecordsIsReadWithItsSidecar) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("part-00002.npy");
  OpReport report;
  ASSERT_TRUE(io::WriteNpyAtomic(path, CategoricalTable({"a", "b", "c"}, {2, 0, 1})).ok());
  { std::ofstream(path + ".dict.json") << R"({"city": ["a", "b", "c"]})"; }
  auto good = ReadShard(path, report);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_THAT(*good->Find("city")->dictionary(), ElementsAre("a", "b", "c"));
  { std::ofstream(path + ".dict.json") << R"({"city": ["a"]})"; }
  auto short_dictionary = ReadShard(path, report);
  ASSERT_FALSE(short_dictionary.ok());
  EXPECT_THAT(short_dictionary.status().message(),
              HasSubstr("column 'city' holds code 2 but its dictionary has 1 entries"));
  { std::ofstream(path + ".dict.json") << R"({"x": ["a"]})"; }
  EXPECT_THAT(ReadShard(path, report).status().message(),
              HasSubstr("names column 'x', which is not an int32 column"));
  { std::ofstream(path + ".dict.json") << "{oops"; }
  EXPECT_THAT(ReadShard(path, report).status().message(), HasSubstr("dictionary, byte"));
}

}  // namespace
}  // namespace coupler::worker
