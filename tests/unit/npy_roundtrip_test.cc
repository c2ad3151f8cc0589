// .npy shards: every dtype survives a write/read round trip at 0, 1 and many rows, the writer's
// header is byte-for-byte what numpy writes, and files laid out by the numpy format spec (hand
// built here, as numpy 1.x/2.x's np.save produces them) read back as the right columns.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/npy_header.h"
#include "runtime/io/npy_reader.h"
#include "runtime/io/npy_writer.h"
#include "runtime/io/temp_dir.h"

namespace coupler::io {
namespace {

using ::testing::HasSubstr;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// Every supported dtype, with values that expose byte-order or transposition mistakes.
Table AllDtypes(size_t rows) {
  std::vector<float> f32(rows);
  std::vector<int32_t> i32(rows);
  std::vector<uint16_t> f16(rows);
  std::vector<uint16_t> bf16(rows);
  std::vector<double> f64(rows);
  std::vector<int64_t> i64(rows);
  std::vector<uint8_t> flags(rows);
  std::vector<int64_t> when(rows);
  for (size_t r = 0; r < rows; ++r) {
    i64[r] = (int64_t{1} << 40) + static_cast<int64_t>(r) * 16777217;
    flags[r] = r % 3 == 0;
    when[r] = r % 5 == 4 ? kMissingInt64 : 1704067200'000'000'000 + static_cast<int64_t>(r);
    f32[r] = static_cast<float>(r) * 0.5f - 3.25f;
    i32[r] = static_cast<int32_t>(r * 7919) - 1'000'000;
    f16[r] = static_cast<uint16_t>(0x3C00 + r);
    bf16[r] = static_cast<uint16_t>(0xBF80 - r);
    f64[r] = std::ldexp(1.0 + static_cast<double>(r), -40) + 1e10;
  }
  Table table;
  EXPECT_TRUE(table.AddColumn(Column::Float32("f32", f32)).ok());
  EXPECT_TRUE(table.AddColumn(Column::Int32("label", i32)).ok());
  EXPECT_TRUE(table.AddColumn(Column("half", f16, ElementType::kFloat16)).ok());
  EXPECT_TRUE(table.AddColumn(Column("brain", bf16, ElementType::kBFloat16)).ok());
  EXPECT_TRUE(table.AddColumn(Column::Float64("wide", f64)).ok());
  EXPECT_TRUE(table.AddColumn(Column::Int64("id", i64)).ok());
  EXPECT_TRUE(table.AddColumn(Column("flag", flags, ElementType::kBool)).ok());
  EXPECT_TRUE(table.AddColumn(Column("ts", when, ElementType::kDatetime64)).ok());
  return table;
}

void ExpectSameTable(const Table& want, const Table& got) {
  ASSERT_EQ(want.num_columns(), got.num_columns());
  ASSERT_EQ(want.rows(), got.rows());
  for (size_t c = 0; c < want.num_columns(); ++c) {
    SCOPED_TRACE(want.column(c).name());
    EXPECT_EQ(want.column(c).name(), got.column(c).name());
    EXPECT_EQ(want.column(c).dtype(), got.column(c).dtype());
    ASSERT_EQ(want.column(c).size_bytes(), got.column(c).size_bytes());
    if (want.column(c).size_bytes() > 0) {  // memcmp on an empty vector's null data is UB
      EXPECT_EQ(0, std::memcmp(want.column(c).data(), got.column(c).data(),
                               want.column(c).size_bytes()));
    }
  }
}

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::Create("npy-test-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(dir).value());
  }
  std::string Path(const std::string& name) const { return dir_->File(name); }

  std::optional<TempDir> dir_;
};

TEST_F(NpyTest, RoundTripsEveryDtypeAtZeroOneAndManyRows) {
  for (size_t rows : {size_t{0}, size_t{1}, size_t{3}, size_t{100'003}}) {
    SCOPED_TRACE(rows);
    const Table table = AllDtypes(rows);
    const std::string path = Path("shard-" + std::to_string(rows) + ".npy");
    ASSERT_TRUE(WriteNpyAtomic(path, table).ok());
    uint64_t file_bytes = 0;
    auto read = ReadNpy(path, &file_bytes);
    ASSERT_TRUE(read.ok()) << read.status().ToString();
    ExpectSameTable(table, *read);
    EXPECT_EQ(file_bytes, NpyFileSize(table));
    EXPECT_EQ(file_bytes, ReadFile(path).size());
    const uint64_t data_bytes = rows * (4 + 4 + 2 + 2 + 8 + 8 + 1 + 8);
    EXPECT_EQ((file_bytes - data_bytes) % 64, 0u);  // numpy pads the header to 64 bytes
  }
}

// numpy's own type strings, so np.load gives int64 ids, bools and datetime64[ns] timestamps.
TEST_F(NpyTest, Int64BoolAndDatetimeUseNumpysTypeStrings) {
  const Table table = AllDtypes(2);
  ASSERT_TRUE(WriteNpyAtomic(Path("types.npy"), table).ok());
  const std::string bytes = ReadFile(Path("types.npy"));
  EXPECT_THAT(bytes, HasSubstr("('id', '<i8'), ('flag', '|b1'), ('ts', '<M8[ns]')"));
}

TEST_F(NpyTest, SingleColumnRoundTrip) {
  Table table;
  ASSERT_TRUE(table.AddColumn(Column::Float32("x", {1.0f, -0.0f, NAN, INFINITY})).ok());
  ASSERT_TRUE(WriteNpyAtomic(Path("one.npy"), table).ok());
  auto read = ReadNpy(Path("one.npy"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ExpectSameTable(table, *read);
}

// The exact bytes numpy's np.save writes for
//   np.array([(1.5, 7), (-2.0, 3)], dtype=[('p0', '<f4'), ('label', '<i4')])
// (format 1.0: magic, version, little-endian u16 header length 118, the dict, spaces up to a
// 64-byte boundary, '\n', then packed records).
std::string NumpyStructuredFile() {
  std::string dict =
      "{'descr': [('p0', '<f4'), ('label', '<i4')], 'fortran_order': False, 'shape': (2,), }";
  dict.append(128 - 10 - 1 - dict.size(), ' ');
  dict += '\n';
  std::string file("\x93NUMPY\x01\x00\x76\x00", 10);
  file += dict;
  const float p0[] = {1.5f, -2.0f};
  const int32_t label[] = {7, 3};
  for (int r = 0; r < 2; ++r) {
    file.append(reinterpret_cast<const char*>(&p0[r]), 4);
    file.append(reinterpret_cast<const char*>(&label[r]), 4);
  }
  return file;
}

TEST_F(NpyTest, ReadsAFileLaidOutByTheNumpyFormatSpec) {
  WriteFile(Path("numpy.npy"), NumpyStructuredFile());
  auto read = ReadNpy(Path("numpy.npy"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->rows(), 2u);
  ASSERT_EQ(read->num_columns(), 2u);
  EXPECT_EQ(read->column(0).name(), "p0");
  EXPECT_THAT(read->column(0).values<float>(), ::testing::ElementsAre(1.5f, -2.0f));
  EXPECT_EQ(read->column(1).name(), "label");
  EXPECT_EQ(read->column(1).dtype(), ElementType::kInt32);
  EXPECT_THAT(read->column(1).values<int32_t>(), ::testing::ElementsAre(7, 3));
}

TEST_F(NpyTest, WritesExactlyTheBytesNumpyWrites) {
  Table table;
  ASSERT_TRUE(table.AddColumn(Column::Float32("p0", {1.5f, -2.0f})).ok());
  ASSERT_TRUE(table.AddColumn(Column::Int32("label", {7, 3})).ok());
  ASSERT_TRUE(WriteNpyAtomic(Path("ours.npy"), table).ok());
  EXPECT_EQ(ReadFile(Path("ours.npy")), NumpyStructuredFile());
}

TEST_F(NpyTest, ReadsPlainTwoDimensionalArraysAsColumnsC0C1) {
  // np.save of np.array([[1, 2], [3, 4], [5, 6]], dtype='<f4')
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }";
  dict.append(128 - 10 - 1 - dict.size(), ' ');
  std::string file = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict + "\n" +
                     Bytes(std::vector<float>{1, 2, 3, 4, 5, 6});
  WriteFile(Path("plain.npy"), file);
  auto read = ReadNpy(Path("plain.npy"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->num_columns(), 2u);
  EXPECT_EQ(read->column(0).name(), "c0");
  EXPECT_THAT(read->column(0).values<float>(), ::testing::ElementsAre(1, 3, 5));
  EXPECT_EQ(read->column(1).name(), "c1");
  EXPECT_THAT(read->column(1).values<float>(), ::testing::ElementsAre(2, 4, 6));

  // A 1-D int32 array is one column.
  std::string dict1 = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
  dict1.append(128 - 10 - 1 - dict1.size(), ' ');
  WriteFile(Path("plain1.npy"), std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict1 + "\n" +
                                    Bytes(std::vector<int32_t>{-5, 9}));
  auto one = ReadNpy(Path("plain1.npy"));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_THAT(one->column(0).values<int32_t>(), ::testing::ElementsAre(-5, 9));
}

TEST_F(NpyTest, BigHeadersUseVersion2AndUnicodeNamesVersion3) {
  Table wide;
  for (int c = 0; c < 3000; ++c) {  // ~ 3000 * 30 bytes of descr: over 64 KiB
    ASSERT_TRUE(wide.AddColumn(Column::Float32("a_rather_long_column_" + std::to_string(c),
                                               {static_cast<float>(c)})).ok());
  }
  ASSERT_TRUE(WriteNpyAtomic(Path("wide.npy"), wide).ok());
  EXPECT_EQ(ReadFile(Path("wide.npy")).substr(6, 2), std::string("\x02\x00", 2));
  auto read_wide = ReadNpy(Path("wide.npy"));
  ASSERT_TRUE(read_wide.ok()) << read_wide.status().ToString();
  ExpectSameTable(wide, *read_wide);

  Table named;
  ASSERT_TRUE(named.AddColumn(Column::Float32("température", {1.0f})).ok());
  ASSERT_TRUE(named.AddColumn(Column::Float32("it's \"quoted\"\\", {2.0f})).ok());
  ASSERT_TRUE(WriteNpyAtomic(Path("named.npy"), named).ok());
  EXPECT_EQ(ReadFile(Path("named.npy")).substr(6, 2), std::string("\x03\x00", 2));
  auto read_named = ReadNpy(Path("named.npy"));
  ASSERT_TRUE(read_named.ok()) << read_named.status().ToString();
  ExpectSameTable(named, *read_named);
}

// Python 3 writes non-printable or escaped characters of field names as \x, \u, \U escapes.
TEST_F(NpyTest, ReadsEscapedFieldNames) {
  std::string dict = "{'descr': [('caf\\u00e9', '<f4'), (\"it's\", '<f4'), ('t\\tab', '<f4')], "
                     "'fortran_order': False, 'shape': (1,), }";
  dict.append(128 - 10 - 1 - dict.size(), ' ');
  WriteFile(Path("escaped.npy"), std::string("\x93NUMPY\x01\x00\x76\x00", 10) + dict + "\n" +
                                     Bytes(std::vector<float>{1, 2, 3}));
  auto read = ReadNpy(Path("escaped.npy"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->column(0).name(), "caf\xC3\xA9");
  EXPECT_EQ(read->column(1).name(), "it's");
  EXPECT_EQ(read->column(2).name(), "t\tab");
}

TEST_F(NpyTest, WriteCreatesDirectoriesAndLeavesNoTempFiles) {
  const std::string path = Path("a/b/c/out.npy");
  ASSERT_TRUE(WriteNpyAtomic(path, AllDtypes(10)).ok());
  ASSERT_TRUE(WriteNpyAtomic(path, AllDtypes(20)).ok());  // replaces the old file
  auto read = ReadNpy(path);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->rows(), 20u);
  size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(Path("a/b/c"))) {
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST_F(NpyTest, WriterRefusesTablesThatCannotBeShards) {
  const Table empty;
  Status status = WriteNpyAtomic(Path("empty.npy"), empty);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("at least one column"));

  Table ragged;
  ASSERT_TRUE(ragged.AddColumn(Column::Float32("a", {1, 2})).ok());
  ASSERT_TRUE(ragged.AddColumn(Column::Float32("b", {1, 2})).ok());
  ragged.column(1).Resize(1);
  status = WriteNpyAtomic(Path("ragged.npy"), ragged);
  EXPECT_THAT(status.message(), HasSubstr("column 'b' has 1 rows"));
  EXPECT_FALSE(std::filesystem::exists(Path("ragged.npy")));
}

TEST(TableTest, AddColumnRefusesDuplicatesAndLengthMismatch) {
  Table table;
  ASSERT_TRUE(table.AddColumn(Column::Float32("a", {1, 2})).ok());
  EXPECT_THAT(table.AddColumn(Column::Float32("a", {1, 2})).message(), HasSubstr("duplicate"));
  EXPECT_THAT(table.AddColumn(Column::Float32("b", {1})).message(),
              HasSubstr("has 1 rows but the table has 2"));
  EXPECT_THAT(table.AddColumn(Column::Float32("", {1, 2})).message(), HasSubstr("non-empty"));
}

}  // namespace
}  // namespace coupler::io
