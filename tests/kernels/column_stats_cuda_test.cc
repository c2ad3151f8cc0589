// column_stats' CUDA twin against the CPU twin. The GPU sums in another order (tiles reduced in a
// block, partials merged on the host), so count, min and max must match exactly while mean and
// M2 may differ by rounding: relative 1e-9 of the column's scale, max(|mean|, stddev), which
// leaves room for reassociating float64 sums over 10^7 elements (about 1e-16 * sqrt(n) * a few)
// yet catches any lost or double-counted element or tile.
#include "kernels/column_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/device.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

constexpr double kRelativeTolerance = 1e-9;

// Sizes around the GPU tile (4096) and the CPU block (2048), partial last tiles, and more tiles
// than a full device has blocks (so blocks fold several tiles each).
constexpr size_t kSizes[] = {1, 2, 7, 4095, 4097, 100'003, (size_t{1} << 22) + 11};

::testing::AssertionResult NearlyEqual(const char* what, double cpu, double gpu, double scale) {
  if (std::isnan(cpu) || std::isnan(gpu)) {
    if (std::isnan(cpu) && std::isnan(gpu)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << what << ": cpu " << cpu << ", gpu " << gpu;
  }
  if (std::abs(cpu - gpu) <= kRelativeTolerance * scale) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": cpu " << cpu << ", gpu " << gpu
                                       << ", scale " << scale;
}

// count, min and max exactly; mean and M2 within tolerance, NaN exactly where the CPU has NaN.
void ExpectMatches(const ColumnMoments& cpu, const ColumnMoments& gpu) {
  EXPECT_EQ(cpu.count, gpu.count);
  EXPECT_EQ(cpu.min, gpu.min);
  EXPECT_EQ(cpu.max, gpu.max);
  const double stddev = PopulationStddev(cpu);
  const double scale = std::max(std::abs(cpu.mean), std::isnan(stddev) ? 0.0 : stddev);
  EXPECT_TRUE(NearlyEqual("mean", cpu.mean, gpu.mean, scale));
  // M2 is a sum of squares: its own magnitude is its scale.
  EXPECT_TRUE(NearlyEqual("m2", cpu.m2, gpu.m2, std::abs(cpu.m2)));
}

// Finite floats of several shapes: centred, offset far from zero, tiny, huge and mixed.
std::vector<float> FiniteColumn(size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> column(n);
  for (size_t i = 0; i < n; ++i) {
    switch (rng.Next() % 4) {
      case 0: column[i] = rng.Uniform(-4.0f, 4.0f); break;
      case 1: column[i] = 1.0e6f + rng.Uniform(-1.0f, 1.0f); break;
      case 2: column[i] = rng.Uniform(-1.0f, 1.0f) * 0x1p-140f; break;  // subnormals
      default: column[i] = rng.Uniform(-1.0f, 1.0f) * 1.0e30f; break;
    }
  }
  return column;
}

Result<ColumnMoments> Moments(const std::vector<float>& column, Backend backend) {
  return ComputeMoments(std::span<const float>(column), backend);
}

TEST(ColumnStatsBackend, NoDeviceIsUnavailable) {
  if (HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  const std::vector<float> column = {1.0f, 2.0f};
  auto m = Moments(column, Backend::kCuda);
  EXPECT_EQ(m.status().code(), StatusCode::kUnavailable) << m.status().ToString();
  EXPECT_NE(m.status().message().find("column_stats"), std::string::npos);
}

TEST(ColumnStatsCudaTest, FiniteFloatColumnsMatchCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    const std::vector<float> column = FiniteColumn(n, 500 + n);
    auto cpu = Moments(column, Backend::kCpu);
    auto gpu = Moments(column, Backend::kCuda);
    ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status().ToString();
    EXPECT_FALSE(std::isnan(gpu->mean) || std::isnan(gpu->m2));
    ExpectMatches(*cpu, *gpu);
  }
}

TEST(ColumnStatsCudaTest, CrossesAChunkSeam) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const std::vector<float> column = FiniteColumn(kCudaChunkElements + 1001, 17);
  auto cpu = Moments(column, Backend::kCpu);
  auto gpu = Moments(column, Backend::kCuda);
  ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status().ToString();
  ExpectMatches(*cpu, *gpu);
}

// Every float class: NaN is a missing value both twins skip (count, min and max match exactly,
// infinities included).
TEST(ColumnStatsCudaTest, EveryFloatClassMatchesCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    const std::vector<float> column = RandomColumn(n, 600 + n);
    auto cpu = Moments(column, Backend::kCpu);
    auto gpu = Moments(column, Backend::kCuda);
    ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status().ToString();
    EXPECT_EQ(cpu->count, gpu->count);
    EXPECT_EQ(cpu->min, gpu->min);
    EXPECT_EQ(cpu->max, gpu->max);
    // Which non-finite value an infinity leaves in the mean depends on where the partials are
    // cut, which the twins do differently; only finiteness is a shared contract there.
    EXPECT_EQ(std::isfinite(cpu->mean), std::isfinite(gpu->mean));
    EXPECT_EQ(std::isfinite(cpu->m2), std::isfinite(gpu->m2));
    if (std::isfinite(cpu->mean) && std::isfinite(cpu->m2)) ExpectMatches(*cpu, *gpu);
  }
}

TEST(ColumnStatsCudaTest, AllNanColumnIsTheEmptyColumn) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  const std::vector<float> column(5000, std::numeric_limits<float>::quiet_NaN());
  auto gpu = Moments(column, Backend::kCuda);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_EQ(*gpu, ColumnMoments{});
  auto cpu = Moments(column, Backend::kCpu);
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(*cpu, *gpu);
}

// Finite values with gaps (1% and 50% missing, and whole tiles missing): both twins skip the
// same values, so count, min and max match exactly and mean and M2 to rounding.
TEST(ColumnStatsCudaTest, MissingValuesAreSkippedLikeTheCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : kSizes) {
    for (const uint64_t every : {uint64_t{100}, uint64_t{2}}) {
      SCOPED_TRACE(std::to_string(n) + " every " + std::to_string(every));
      SplitMix64 rng(900 + n + every);
      std::vector<float> column(n);
      for (size_t i = 0; i < n; ++i) {
        const bool gap = rng.Next() % every == 0 || (i >= 8192 && i < 3 * 8192);
        column[i] = gap ? std::numeric_limits<float>::quiet_NaN()
                        : static_cast<float>(static_cast<double>(rng.Next() % 100000) / 7.0);
      }
      auto cpu = Moments(column, Backend::kCpu);
      auto gpu = Moments(column, Backend::kCuda);
      ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status().ToString();
      EXPECT_FALSE(std::isnan(cpu->mean) || std::isnan(gpu->mean));
      ExpectMatches(*cpu, *gpu);
    }
  }
}

TEST(ColumnStatsCudaTest, Int32ColumnsMatchCpu) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  for (size_t n : kSizes) {
    SCOPED_TRACE(n);
    SplitMix64 rng(700 + n);
    std::vector<int32_t> column(n);
    for (int32_t& v : column) v = static_cast<int32_t>(static_cast<uint32_t>(rng.Next()));
    if (n > 2) {
      column[n / 2] = std::numeric_limits<int32_t>::min();
      column[n - 1] = std::numeric_limits<int32_t>::max();
    }
    auto cpu = ComputeMoments(std::span<const int32_t>(column), Backend::kCpu);
    auto gpu = ComputeMoments(std::span<const int32_t>(column), Backend::kCuda);
    ASSERT_TRUE(cpu.ok() && gpu.ok()) << gpu.status().ToString();
    ExpectMatches(*cpu, *gpu);
  }
}

TEST(ColumnStatsCudaTest, EmptyColumnIsTheIdentity) {
  if (!HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  auto gpu = Moments({}, Backend::kCuda);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_EQ(*gpu, ColumnMoments{});
}

}  // namespace
}  // namespace coupler::kernels
