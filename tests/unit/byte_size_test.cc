// The byte-size parser behind --device-memory-limit and gpu_memory, and the formatter every OOM
// and share message prints with.
#include "runtime/util/byte_size.h"

#include <cstddef>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace coupler::util {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(ParseByteSizeTest, AcceptsTheDocumentedForms) {
  const struct {
    const char* text;
    size_t bytes;
  } kCases[] = {
      {"512MiB", size_t{512} << 20},
      {"2GiB", size_t{2} << 30},
      {"1.5GB", 1500000000},
      {"4096", 4096},
      {"64KiB", 65536},
      {"64k", 65536},
      {"64K", 65536},
      {"1G", size_t{1} << 30},
      {"100B", 100},
      {"1kb", 1000},
      {"1KB", 1000},
      {"8 MB", 8000000},
      {"  1 mib\t", size_t{1} << 20},
      {"2.5 gib", 2684354560},
      {"4Gi", size_t{4} << 30},
      {"3TiB", size_t{3} << 40},
      {"1.1GB", 1100000000},  // exact, no binary rounding down to 1099999999
      {"0.5k", 512},
      {"1.5B", 1},            // fractional bytes are floored
      {"1.999", 1},
      {"0.0009765625KiB", 1},
      {"0", 0},
      {"18446744073709551615", std::numeric_limits<size_t>::max()},
      {"16383GiB", (size_t{16383}) << 30},
      {"18446744073709551.6kb", 18446744073709551600u},  // the fraction still fits
  };
  for (const auto& c : kCases) {
    auto parsed = ParseByteSize(c.text);
    ASSERT_TRUE(parsed.ok()) << c.text << ": " << parsed.status().ToString();
    EXPECT_EQ(*parsed, c.bytes) << c.text;
  }
}

TEST(ParseByteSizeTest, RejectsMalformedInputNamingIt) {
  const char* kBad[] = {
      "",        "   ",     "-1",     "-1GiB",   "abc",     "GiB",   "12XB",
      "1.",      ".5",      "1..5",   "1e9",     "1 2",     "+5",    "1.5.5MiB",
      "1 GiBs",  "1iB",     "1bb",    "18446744073709551616",   "17179869184GiB",
      "18446744073709551.7kb",  // whole part fits, the fraction pushes it past 2^64 - 1
      "1.0000000000000001",  // more decimals than the parser keeps exactly
  };
  for (const char* text : kBad) {
    auto parsed = ParseByteSize(text);
    ASSERT_FALSE(parsed.ok()) << '"' << text << "\" parsed as " << *parsed;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(parsed.status().message().find('"' + std::string(text) + '"'), std::string::npos)
        << parsed.status().message();
  }
}

TEST(FormatBytesTest, UsesBinaryUnitsWithOneDecimal) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(17), "17 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
  EXPECT_EQ(FormatBytes(1024), "1.0 KiB");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(536870912), "512.0 MiB");
  EXPECT_EQ(FormatBytes(536034099), "511.2 MiB");
  EXPECT_EQ(FormatBytes(kMiB - 1), "1.0 MiB");  // not "1024.0 KiB"
  EXPECT_EQ(FormatBytes(size_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(FormatBytes(std::numeric_limits<size_t>::max()), "16.0 EiB");
}

}  // namespace
}  // namespace coupler::util
