// Malformed .npy files: each gives an InvalidArgument that names the file and says what is
// wrong, never a crash or a silently wrong table.
#include <fstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/npy_reader.h"
#include "runtime/io/temp_dir.h"

namespace coupler::io {
namespace {

using ::testing::HasSubstr;

// A version 1.0 file: magic, version, header padded to 64 bytes, then `data`.
std::string NpyFile(std::string dict, const std::string& data,
                    const std::string& version = std::string("\x01\x00", 2)) {
  const size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - 10 - 1 - dict.size(), ' ');
  dict += '\n';
  std::string out = "\x93NUMPY" + version;
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + data;
}

std::string Dict(const std::string& descr, const std::string& shape,
                 const std::string& fortran = "False") {
  return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

const std::string kTwoFields = "[('a', '<f4'), ('b', '<i4')]";
const std::string kEightBytes(8, '\x01');  // one record of kTwoFields

struct Malformed {
  std::string name;
  std::string bytes;
  std::string expected;  // a substring of the error
};

std::vector<Malformed> Cases() {
  std::string long_header = NpyFile(Dict(kTwoFields, "(1,)"), kEightBytes);
  long_header[8] = '\xFF';  // header length 0x??FF: past the end of the file
  long_header[9] = '\x7F';
  std::string odd_length = NpyFile(Dict(kTwoFields, "(1,)"), kEightBytes);
  return {
      {"empty", "", "only 0 bytes long"},
      {"bad_magic", "\x89PNG\r\n\x1a\n" + std::string(100, 'x'), "bad magic"},
      {"version_9", NpyFile(Dict(kTwoFields, "(1,)"), kEightBytes, std::string("\x09\x00", 2)),
       "unsupported .npy format version 9.0"},
      {"header_past_end", long_header, "runs past the end of the file"},
      {"truncated_data", NpyFile(Dict(kTwoFields, "(3,)"), kEightBytes + kEightBytes),
       "truncated data: the header declares 3 rows of 8 bytes but only 16 data bytes follow"},
      {"trailing_bytes", NpyFile(Dict(kTwoFields, "(1,)"), kEightBytes + "xyz"),
       "3 trailing bytes"},
      {"not_a_dict", NpyFile("['descr', 'shape']", ""), "expected a dict, got a list"},
      {"unterminated_dict", NpyFile("{'descr': '<f4', 'shape': (1,", "abcd"),
       "bad header dict: expected a value"},
      {"missing_shape", NpyFile("{'descr': '<f4', 'fortran_order': False}", "abcd"),
       "no 'shape' key"},
      {"extra_key", NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}",
                            "abcd"),
       "unexpected key 'x'"},
      {"shape_not_tuple", NpyFile(Dict("'<f4'", "'many'"), "abcd"), "'shape' must be a tuple"},
      {"negative_shape", NpyFile(Dict("'<f4'", "(-1,)"), ""), "non-negative"},
      {"big_endian", NpyFile(Dict("[('a', '>f4')]", "(1,)"), "abcd"),
       "field 'a' has dtype '>f4', which is big-endian"},
      {"big_endian_plain", NpyFile(Dict("'>i4'", "(1,)"), "abcd"), "big-endian"},
      {"unsupported_dtype", NpyFile(Dict("[('a', '<u8')]", "(1,)"), kEightBytes),
       "field 'a' has dtype '<u8', which is not supported"},
      {"object_dtype", NpyFile(Dict("'|O'", "(1,)"), kEightBytes), "dtype '|O'"},
      {"fortran_order", NpyFile(Dict("'<f4'", "(2, 2)", "True"), std::string(16, '\0')),
       "fortran_order is True"},
      {"three_dims", NpyFile(Dict("'<f4'", "(1, 1, 1)"), "abcd"), "got 3 dimensions"},
      {"structured_2d", NpyFile(Dict(kTwoFields, "(1, 1)"), kEightBytes), "must be 1-D"},
      {"subarray_field", NpyFile(Dict("[('a', '<f4', (2,))]", "(1,)"), kEightBytes),
       "sub-array shape"},
      {"duplicate_field", NpyFile(Dict("[('a', '<f4'), ('a', '<f4')]", "(1,)"), kEightBytes),
       "duplicate field 'a'"},
      {"padding_field", NpyFile(Dict("[('a', '<f4'), ('', '|V4')]", "(1,)"), kEightBytes),
       "empty name"},
      {"overflowing_rows", NpyFile(Dict(kTwoFields, "(9223372036854775807,)"), kEightBytes),
       "truncated data"},
      {"huge_int", NpyFile(Dict(kTwoFields, "(99999999999999999999999,)"), kEightBytes),
       "integer out of range"},
      {"deep_nesting", NpyFile(std::string(40, '[') + std::string(40, ']'), ""),
       "nested too deeply"},
      {"no_columns", NpyFile(Dict("'<f4'", "(5, 0)"), ""), "no columns"},
  };
}

TEST(NpyMalformedTest, EachProblemIsAClearInvalidArgumentNamingTheFile) {
  auto dir = TempDir::Create("npy-bad-");
  ASSERT_TRUE(dir.ok());
  for (const Malformed& c : Cases()) {
    SCOPED_TRACE(c.name);
    const std::string path = dir->File(c.name + ".npy");
    std::ofstream(path, std::ios::binary) << c.bytes;
    auto read = ReadNpy(path);
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument) << read.status().ToString();
    EXPECT_THAT(read.status().message(), HasSubstr(path + ": "));
    EXPECT_THAT(read.status().message(), HasSubstr(c.expected));
  }
}

// Every prefix of a valid file is refused (never read as a shorter table, never a crash).
TEST(NpyMalformedTest, EveryTruncationIsRefused) {
  auto dir = TempDir::Create("npy-cut-");
  ASSERT_TRUE(dir.ok());
  const std::string whole = NpyFile(Dict(kTwoFields, "(2,)"), kEightBytes + kEightBytes);
  const std::string path = dir->File("cut.npy");
  for (size_t n = 0; n < whole.size(); ++n) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << whole.substr(0, n);
    auto read = ReadNpy(path);
    ASSERT_FALSE(read.ok()) << "a " << n << "-byte prefix was accepted";
    EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument);
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << whole;
  EXPECT_TRUE(ReadNpy(path).ok());
}

// Random byte corruption (header and data alike) gives a table or an InvalidArgument, never a
// crash; under ASan/UBSan this doubles as a small fuzz run of the header parser.
TEST(NpyMalformedTest, RandomCorruptionIsRefusedOrReadNeverACrash) {
  auto dir = TempDir::Create("npy-fuzz-");
  ASSERT_TRUE(dir.ok());
  const std::string valid = NpyFile(Dict(kTwoFields, "(3,)"), std::string(24, '\x7f'));
  const std::string path = dir->File("fuzz.npy");
  uint64_t state = 12345;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>(state >> 33);
  };
  const char alphabet[] = "{}[](),:' \"<>|0123456789-fiuTrueFalsNone\x93\n\\x";
  for (int round = 0; round < 1000; ++round) {
    std::string bytes = valid;
    const size_t edits = 1 + next() % 4;
    for (size_t e = 0; e < edits; ++e) {
      const size_t at = next() % bytes.size();
      switch (next() % 3) {
        case 0: bytes[at] = alphabet[next() % (sizeof(alphabet) - 1)]; break;
        case 1: bytes[at] = static_cast<char>(next()); break;
        default: bytes.erase(at, 1 + next() % 8); break;
      }
      if (bytes.empty()) bytes = "x";
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    auto read = ReadNpy(path);
    if (!read.ok()) {
      ASSERT_EQ(read.status().code(), StatusCode::kInvalidArgument) << read.status().ToString();
    }
  }
}

TEST(NpyMalformedTest, MissingFileAndDirectoryAreReported) {
  auto dir = TempDir::Create("npy-missing-");
  ASSERT_TRUE(dir.ok());
  auto missing = ReadNpy(dir->File("nope.npy"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("nope.npy"));
  auto directory = ReadNpy(dir->path());
  EXPECT_EQ(directory.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(directory.status().message(), HasSubstr("not a regular file"));
}

}  // namespace
}  // namespace coupler::io
