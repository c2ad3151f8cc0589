// Categorical columns' dictionaries beside their shard: the JSON sidecar's escaping of any byte
// string, its round trip through WriteShard/ReadShard (so every op that keeps a column keeps
// its strings), and no stale sidecar after a shard is rewritten without categorical columns.
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/dictionary_file.h"
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
  const std::string path = dir->File("part-00000.npy");
  OpReport report;
  ASSERT_TRUE(WriteShard(path, CategoricalTable({"Paris", "Lyon"}, {1, -1, 0, 1}), report).ok());
  const std::string sidecar = path + ".dict.json";
  ASSERT_TRUE(fs::exists(sidecar));
  EXPECT_EQ(Slurp(sidecar), "{\n  \"city\": [\"Paris\", \"Lyon\"]\n}\n");
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
  const std::string next = dir->File("next.npy");
  ASSERT_TRUE(WriteShard(next, *back, report).ok());
  auto again = ReadShard(next, report);
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(*again->Find("city")->dictionary(), ElementsAre("Paris", "Lyon"));
}

// A shard whose rows hold only missing strings: an empty dictionary, still categorical.
TEST(ShardDictionaryTest, AnEmptyDictionaryRoundTrips) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("part-00003.npy");
  OpReport report;
  ASSERT_TRUE(WriteShard(path, CategoricalTable({}, {-1, -1}), report).ok());
  auto back = ReadShard(path, report);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_TRUE(back->Find("city")->categorical());
  EXPECT_TRUE(back->Find("city")->dictionary()->empty());
}

TEST(ShardDictionaryTest, RewritingWithoutCategoricalsRemovesTheSidecar) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("part-00001.npy");
  OpReport report;
  ASSERT_TRUE(WriteShard(path, CategoricalTable({"a"}, {0, 0}), report).ok());
  ASSERT_TRUE(fs::exists(path + ".dict.json"));
  io::Table plain;
  ASSERT_TRUE(plain.AddColumn(io::Column::Float32("x", {1, 2, 3})).ok());
  ASSERT_TRUE(WriteShard(path, plain, report).ok());
  EXPECT_FALSE(fs::exists(path + ".dict.json"));
  auto back = ReadShard(path, report);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->num_columns(), 1u);
  // No temp files left beside the shard either.
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir->path())) ++files;
  EXPECT_EQ(files, 1u);
}

// A sidecar that does not belong to its shard (a crash between the two renames, a hand edit)
// is refused rather than mapping codes to the wrong strings.
TEST(ShardDictionaryTest, AStaleSidecarIsRefused) {
  auto dir = io::TempDir::Create();
  ASSERT_TRUE(dir.ok());
  const std::string path = dir->File("part-00002.npy");
  OpReport report;
  ASSERT_TRUE(WriteShard(path, CategoricalTable({"a", "b", "c"}, {2, 0, 1}), report).ok());
  { std::ofstream(path + ".dict.json") << R"({"city": ["a"]})"; }
  auto short_dictionary = ReadShard(path, report);
  ASSERT_FALSE(short_dictionary.ok());
  EXPECT_THAT(short_dictionary.status().message(),
              HasSubstr("column 'city' holds code 2 but its dictionary has 1 entries"));
  { std::ofstream(path + ".dict.json") << R"({"x": ["a"]})"; }
  EXPECT_THAT(ReadShard(path, report).status().message(),
              HasSubstr("names column 'x', which is not an int32 column"));
  { std::ofstream(path + ".dict.json") << "{oops"; }
  EXPECT_THAT(ReadShard(path, report).status().message(), HasSubstr("dictionary sidecar, byte"));
}

}  // namespace
}  // namespace coupler::worker
