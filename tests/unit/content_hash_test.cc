#include "runtime/io/content_hash.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "runtime/io/temp_dir.h"

namespace coupler::io {
namespace {

// The reference implementation's values (libxxhash 0.8's XXH64), across the lengths that take
// each of its paths: empty, the byte tail, 4- and 8-byte tails, the 32-byte stripes.
TEST(ContentHashTest, MatchesTheReferenceXxh64) {
  EXPECT_EQ(Xxh64(""), 0xef46db3751d8e999ULL);
  EXPECT_EQ(Xxh64("a"), 0xd24ec4f1a98c6e5bULL);
  EXPECT_EQ(Xxh64("abc"), 0x44bc2cf5ad770999ULL);
  EXPECT_EQ(Xxh64("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"),
            0x7639d419de614eedULL);
  EXPECT_EQ(Xxh64(std::string(37, 'x')), 0x1e580c475bdc5381ULL);
  EXPECT_EQ(Xxh64("", 7), 0x95f0626f6f0a4409ULL);
  EXPECT_EQ(Xxh64(std::string(37, 'x'), 7), 0xf9a5519f283c36cdULL);
}

TEST(ContentHashTest, HashesAFilesBytesAndTellsOneChangedByteApart) {
  Result<TempDir> dir = TempDir::Create("content-hash-");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  const std::string path = dir->File("data.csv");
  std::string bytes(100'000, 'q');
  {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  Result<uint64_t> h = HashFile(path);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(*h, Xxh64(bytes));
  bytes[54'321] = 'r';
  {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  EXPECT_NE(*HashFile(path), *h);
  EXPECT_EQ(HashFile(dir->File("missing")).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(HashHex(0x1fULL), "000000000000001f");
}

}  // namespace
}  // namespace coupler::io
