// The shuffle's CUDA twins against their CPU twins, bit for bit: hash_partition gives every row
// the CPU's partition (random words, many key columns, across a chunk seam); group_fold gives
// the CPU's count, sum, mean and M2 for uniform, skewed (one key holding 30% of the rows) and
// many-group inputs with skipped rows, values of every magnitude and infinities, folded in one
// call or two (state carried), and across a chunk seam; integer sums wrap alike. Skipped
// without a device (scripts/gpu-check.sh runs them on one).
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"
#include "kernels/group_fold.h"
#include "kernels/hash_partition.h"
#include "runtime/relational/shuffle_math.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

using relational::GroupMoments;
using relational::GroupSums;
using relational::kMissingRow;

std::vector<uint32_t> Route(const std::vector<std::vector<uint64_t>>& words, uint32_t partitions,
                            Backend backend) {
  const std::vector<std::span<const uint64_t>> columns(words.begin(), words.end());
  std::vector<uint32_t> out(words.front().size(), 0xDEADBEEFu);
  const Status status = HashPartition(columns, partitions, out, backend);
  EXPECT_TRUE(status.ok()) << status.ToString();
  return out;
}

std::vector<std::vector<uint64_t>> RandomWords(size_t columns, size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<std::vector<uint64_t>> words(columns, std::vector<uint64_t>(n));
  for (auto& column : words) {
    for (uint64_t& w : column) w = rng.Next() >> (rng.Next() % 60);  // small and large words
  }
  return words;
}

TEST(HashPartitionCudaTest, EveryRowGetsTheCpusPartition) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (const size_t columns : {size_t{1}, size_t{3}, size_t{8}}) {
    for (const size_t n : {size_t{1}, size_t{255}, size_t{100'003}}) {
      const auto words = RandomWords(columns, n, 40 + columns * n);
      for (const uint32_t p : {1u, 7u, 200u, 65536u}) {
        SCOPED_TRACE(std::to_string(columns) + " columns, " + std::to_string(n) + " rows, " +
                     std::to_string(p) + " partitions");
        EXPECT_EQ(Route(words, p, Backend::kCpu), Route(words, p, Backend::kCuda));
      }
    }
  }
}

TEST(HashPartitionCudaTest, CrossesAChunkSeam) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const size_t columns = 2;
  const size_t n = kCudaChunkElements / (2 * columns) + 4099;  // one chunk and a bit
  const auto words = RandomWords(columns, n, 7);
  EXPECT_EQ(Route(words, 64, Backend::kCpu), Route(words, 64, Backend::kCuda));
}

// Rows of `groups` groups: `skew` of them in group 0, a tenth skipped, values from tiny to huge
// (and an infinity now and then), as an aggregated column holds them.
struct FoldInput {
  std::vector<uint32_t> group;
  std::vector<double> x;
  std::vector<int64_t> xi;
};

FoldInput RandomFold(size_t n, uint32_t groups, double skew, uint64_t seed) {
  SplitMix64 rng(seed);
  FoldInput in;
  in.group.resize(n);
  in.x.resize(n);
  in.xi.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const uint64_t v = rng.Next();
    const double u = static_cast<double>(v >> 11) * 0x1p-53;
    in.group[r] = u < 0.1  ? kMissingRow
                  : u < 0.1 + skew ? 0u
                                   : static_cast<uint32_t>(rng.Next() % groups);
    const uint64_t w = rng.Next();
    in.x[r] = w % 997 == 0 ? INFINITY
                           : std::ldexp(static_cast<double>(w >> 20) - 0x1p43, static_cast<int>(w % 80) - 60);
    in.xi[r] = static_cast<int64_t>(rng.Next());
  }
  return in;
}

void ExpectSameMoments(const GroupMoments& cpu, const GroupMoments& gpu) {
  EXPECT_EQ(cpu.n, gpu.n);
  EXPECT_TRUE(SameBits<double>(cpu.sum, gpu.sum));
  EXPECT_TRUE(SameBits<double>(cpu.mean, gpu.mean));
  EXPECT_TRUE(SameBits<double>(cpu.m2, gpu.m2));
}

TEST(GroupFoldCudaTest, MomentsMatchTheCpuBitForBit) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  struct Case {
    size_t n;
    uint32_t groups;
    double skew;
  };
  for (const Case c : {Case{1, 1, 0.0}, Case{1000, 1, 0.0}, Case{100'003, 17, 0.0},
                       Case{100'003, 17, 0.3}, Case{200'000, 150'000, 0.3}}) {
    SCOPED_TRACE(std::to_string(c.n) + " rows, " + std::to_string(c.groups) + " groups, skew " +
                 std::to_string(c.skew));
    const FoldInput in = RandomFold(c.n, c.groups, c.skew, c.n + c.groups);
    GroupMoments cpu(c.groups), gpu(c.groups);
    COUPLER_ASSERT_OK(FoldMoments(in.group, in.x, cpu, Backend::kCpu));
    COUPLER_ASSERT_OK(FoldMoments(in.group, in.x, gpu, Backend::kCuda));
    ExpectSameMoments(cpu, gpu);
    GroupSums cpu_sums(c.groups), gpu_sums(c.groups);
    COUPLER_ASSERT_OK(FoldSums(in.group, in.xi, cpu_sums, Backend::kCpu));
    COUPLER_ASSERT_OK(FoldSums(in.group, in.xi, gpu_sums, Backend::kCuda));
    EXPECT_EQ(cpu_sums.n, gpu_sums.n);
    EXPECT_EQ(cpu_sums.sum, gpu_sums.sum);
  }
}

// A fold continues from the state it is given: two calls on the device equal one on the CPU.
TEST(GroupFoldCudaTest, StateCarriesFromOneCallToTheNext) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const FoldInput in = RandomFold(50'000, 31, 0.3, 3);
  GroupMoments cpu(31), gpu(31);
  COUPLER_ASSERT_OK(FoldMoments(in.group, in.x, cpu, Backend::kCpu));
  const std::span<const uint32_t> g(in.group);
  const std::span<const double> x(in.x);
  COUPLER_ASSERT_OK(FoldMoments(g.first(20'000), x.first(20'000), gpu, Backend::kCuda));
  COUPLER_ASSERT_OK(FoldMoments(g.subspan(20'000), x.subspan(20'000), gpu, Backend::kCuda));
  ExpectSameMoments(cpu, gpu);
}

// Past one chunk of rows (kCudaChunkElements / 4), the second chunk's values continue each
// group's fold where the first left it.
TEST(GroupFoldCudaTest, CrossesAChunkSeam) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const size_t n = kCudaChunkElements / 4 + 5003;
  const FoldInput in = RandomFold(n, 1000, 0.3, 11);
  GroupMoments cpu(1000), gpu(1000);
  COUPLER_ASSERT_OK(FoldMoments(in.group, in.x, cpu, Backend::kCpu));
  COUPLER_ASSERT_OK(FoldMoments(in.group, in.x, gpu, Backend::kCuda));
  ExpectSameMoments(cpu, gpu);
}

}  // namespace
}  // namespace coupler::kernels
