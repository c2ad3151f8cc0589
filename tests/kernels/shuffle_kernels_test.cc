// The shuffle's kernels on the CPU: hash_partition routes every row to the partition the
// shuffle's key hash picks (so the twin a GPU runs is held to the routing every worker uses),
// the pinned routing of a few keys (a change would send one key to two partitions across a
// mixed-version pool), group_fold accumulating across calls, and bad input refused on either
// backend before anything is written. The CUDA parity tests are shuffle_kernels_cuda_test.cc.
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/device.h"
#include "kernels/group_fold.h"
#include "kernels/hash_partition.h"
#include "runtime/relational/key_partition.h"
#include "runtime/relational/shuffle_math.h"
#include "runtime/relational/table_rows.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/unit/relational_test_util.h"

namespace coupler::kernels {
namespace {

using relational::GroupMoments;
using relational::GroupSums;
using relational::kMissingRow;

io::Table MixedKeys() {
  io::Table t;
  EXPECT_TRUE(t.AddColumn(relational::testing::Strings("s", {0, 1, -1, 2, 0, 1, 2, 0},
                                                       {"north", "south", "éast"}))
                  .ok());
  EXPECT_TRUE(t.AddColumn(io::Column::Int64("id", {1, 2, 3, io::kMissingInt64, 1, 9007199254740993LL,
                                                   -7, 0}))
                  .ok());
  EXPECT_TRUE(t.AddColumn(io::Column::Float64("x", {0.5, -0.0, NAN, 3.0, 0.5, 1e300, -2.25, 0.0}))
                  .ok());
  return t;
}

std::vector<uint32_t> Partitions(const io::Table& t, std::span<const size_t> keys, uint32_t p,
                                 Backend backend) {
  const auto words = relational::KeyColumnsHashWords(t, keys);
  const std::vector<std::span<const uint64_t>> columns(words.begin(), words.end());
  std::vector<uint32_t> out(t.rows(), 0xDEADBEEFu);
  const Status status = HashPartition(columns, p, out, backend);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

TEST(HashPartitionBackend, TheCpuTwinRoutesEveryRowAsTheShuffleHashPicks) {
  const io::Table t = MixedKeys();
  for (const std::vector<size_t>& keys :
       {std::vector<size_t>{0}, {1}, {2}, {0, 1}, {2, 0, 1}}) {
    const std::vector<uint64_t> hashes = relational::HashKeys(t, keys);
    for (const uint32_t p : {1u, 2u, 7u, 64u, 65536u}) {
      const std::vector<uint32_t> got = Partitions(t, keys, p, Backend::kCpu);
      for (size_t r = 0; r < t.rows(); ++r) {
        EXPECT_EQ(got[r], relational::PartitionOfHash(hashes[r], p)) << "row " << r << " of " << p;
        EXPECT_LT(got[r], p);
      }
    }
  }
}

// The routing is part of the pool's contract: two workers of different builds must send a key
// to the same partition. These values are what every build since the shuffle landed computes.
TEST(HashPartitionBackend, TheRoutingOfAKeyIsPinned) {
  const io::Table t = MixedKeys();
  const std::vector<size_t> by_string = {0}, by_id = {1}, by_both = {0, 1};
  EXPECT_EQ(Partitions(t, by_string, 16, Backend::kCpu),
            (std::vector<uint32_t>{8, 1, 4, 15, 8, 1, 15, 8}));
  EXPECT_EQ(Partitions(t, by_id, 16, Backend::kCpu), (std::vector<uint32_t>{0, 12, 12, 4, 0, 13, 12, 5}));
  EXPECT_EQ(Partitions(t, by_both, 1000, Backend::kCpu), (std::vector<uint32_t>{619, 251, 23, 202, 619, 644, 134, 845}));
}

TEST(HashPartitionBackend, BadInputIsRefusedOnEitherBackend) {
  const std::vector<uint64_t> words = {1, 2, 3};
  const std::vector<uint64_t> short_words = {1, 2};
  std::vector<uint32_t> out(3, 7);
  for (const Backend backend : {Backend::kCpu, Backend::kCuda}) {
    const std::vector<std::span<const uint64_t>> one = {words};
    const std::vector<std::span<const uint64_t>> mismatched = {words, short_words};
    EXPECT_EQ(HashPartition(one, 0, out, backend).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(HashPartition(one, 65537, out, backend).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(HashPartition({}, 4, out, backend).code(), StatusCode::kInvalidArgument);
    const Status status = HashPartition(mismatched, 4, out, backend);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("key column 1 has 2 hash words for 3 rows"), std::string::npos)
        << status.ToString();
    EXPECT_EQ(out, (std::vector<uint32_t>(3, 7))) << "refused before writing";
  }
}

TEST(HashPartitionBackend, NoDeviceIsUnavailable) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  const std::vector<uint64_t> words = {1, 2, 3};
  const std::vector<std::span<const uint64_t>> one = {words};
  std::vector<uint32_t> out(3, 7);
  const Status status = HashPartition(one, 4, out, Backend::kCuda);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_NE(status.message().find("hash_partition"), std::string::npos);
  EXPECT_EQ(out, (std::vector<uint32_t>(3, 7)));
}

TEST(GroupFoldBackend, FoldingInPiecesGivesTheBitsOfOneFold) {
  SplitMix64 rng(17);
  const size_t n = 10'007, groups = 13;
  std::vector<uint32_t> group(n);
  std::vector<double> x(n);
  for (size_t r = 0; r < n; ++r) {
    const uint64_t v = rng.Next();
    group[r] = v % 10 == 0 ? kMissingRow : static_cast<uint32_t>((v >> 8) % groups);
    x[r] = std::ldexp(static_cast<double>(v >> 11), -40) - 1000.0;
  }
  GroupMoments whole(groups), pieces(groups);
  ASSERT_TRUE(FoldMoments(group, x, whole, Backend::kCpu).ok());
  const std::span<const uint32_t> g(group);
  const std::span<const double> v(x);
  ASSERT_TRUE(FoldMoments(g.first(4000), v.first(4000), pieces, Backend::kCpu).ok());
  ASSERT_TRUE(FoldMoments(g.subspan(4000), v.subspan(4000), pieces, Backend::kCpu).ok());
  EXPECT_EQ(whole.n, pieces.n);
  EXPECT_TRUE(SameBits<double>(whole.sum, pieces.sum));
  EXPECT_TRUE(SameBits<double>(whole.mean, pieces.mean));
  EXPECT_TRUE(SameBits<double>(whole.m2, pieces.m2));
  int64_t folded = 0;
  for (const int64_t c : whole.n) folded += c;
  size_t skipped = 0;
  for (const uint32_t k : group) skipped += k == kMissingRow ? 1 : 0;
  EXPECT_EQ(static_cast<size_t>(folded), n - skipped) << "skipped rows are never folded";
}

TEST(GroupFoldBackend, IntegerSumsWrapAsNumpyDoes) {
  const std::vector<uint32_t> group = {0, 0, 1, kMissingRow};
  const std::vector<int64_t> x = {INT64_MAX, 2, -5, 1000};
  GroupSums sums(2);
  ASSERT_TRUE(FoldSums(group, x, sums, Backend::kCpu).ok());
  EXPECT_EQ(sums.n, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(sums.sum, (std::vector<int64_t>{INT64_MIN + 1, -5}));
}

TEST(GroupFoldBackend, BadInputIsRefusedBeforeTheStateChanges) {
  const std::vector<uint32_t> group = {0, 2};  // group 2 of 2
  const std::vector<double> x = {1.0, 2.0};
  for (const Backend backend : {Backend::kCpu, Backend::kCuda}) {
    GroupMoments m(2);
    const Status status = FoldMoments(group, x, m, backend);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
    EXPECT_NE(status.message().find("row 1 names group 2 of 2"), std::string::npos);
    EXPECT_EQ(m.n, (std::vector<int64_t>{0, 0}));
    const std::vector<double> longer = {1.0, 2.0, 3.0};
    const std::vector<uint32_t> ok_group = {0, 1};
    EXPECT_EQ(FoldMoments(ok_group, longer, m, backend).code(), StatusCode::kInvalidArgument);
    GroupSums s(2);
    const std::vector<int64_t> xi = {1, 2};
    EXPECT_EQ(FoldSums(group, xi, s, backend).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.sum, (std::vector<int64_t>{0, 0}));
  }
}

TEST(GroupFoldBackend, NoDeviceIsUnavailableAndLeavesTheState) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  const std::vector<uint32_t> group = {0, 1};
  const std::vector<double> x = {1.0, 2.0};
  GroupMoments m(2);
  const Status status = FoldMoments(group, x, m, Backend::kCuda);
  EXPECT_EQ(status.code(), StatusCode::kUnavailable) << status.ToString();
  EXPECT_NE(status.message().find("group_fold"), std::string::npos);
  EXPECT_EQ(m.n, (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace coupler::kernels
