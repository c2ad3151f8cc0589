// column_stats and standardize: per-shard partials merged with Chan's formula equal one pass
// over all the data, and standardizing with the reduced stats gives mean 0 and stddev 1.
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/column_stats.h"
#include "kernels/standardize.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

// Independent reference: long double, two passes over everything.
ColumnMoments Reference(std::span<const float> data) {
  ColumnMoments m;
  m.count = data.size();
  long double sum = 0;
  for (float v : data) {
    sum += v;
    m.min = std::min<double>(m.min, v);
    m.max = std::max<double>(m.max, v);
  }
  const long double mean = sum / static_cast<long double>(data.size());
  long double m2 = 0;
  for (float v : data) m2 += (v - mean) * (v - mean);
  m.mean = static_cast<double>(mean);
  m.m2 = static_cast<double>(m2);
  return m;
}

std::vector<float> Gaussianish(size_t n, float mean, float spread, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<float> data(n);
  for (float& v : data) {
    // Sum of uniforms: bell-shaped, deterministic, no <random> distribution differences.
    float s = 0;
    for (int k = 0; k < 4; ++k) s += rng.Uniform(-1.0f, 1.0f);
    v = mean + spread * s;
  }
  return data;
}

void ExpectClose(double want, double got, double relative) {
  EXPECT_LE(std::fabs(want - got), relative * std::max(1.0, std::fabs(want)))
      << "want " << want << " got " << got;
}

TEST(KernelsStatsTest, MergedPartialsEqualOnePassOverAllData) {
  // A large offset relative to the spread is where naive sum-of-squares formulas fail.
  const std::vector<float> data = Gaussianish(1'000'003, 1.0e4f, 3.0f, 42);
  const ColumnMoments want = Reference(data);
  // Uneven shards, including empty ones and ones smaller than the kernel's blocks.
  const size_t cuts[] = {0, 0, 1, 17, 2048, 2049, 100'000, 100'000, 555'555, data.size()};
  ColumnMoments merged;
  for (size_t i = 0; i + 1 < std::size(cuts); ++i) {
    const std::span<const float> shard(data.data() + cuts[i], cuts[i + 1] - cuts[i]);
    auto partial = ComputeMoments(shard, Backend::kCpu);
    ASSERT_TRUE(partial.ok());
    merged = MergeMoments(merged, *partial);
  }
  EXPECT_EQ(merged.count, want.count);
  ExpectClose(want.mean, merged.mean, 1e-9);
  ExpectClose(want.m2, merged.m2, 1e-9);
  EXPECT_EQ(merged.min, want.min);
  EXPECT_EQ(merged.max, want.max);

  auto whole = ComputeMoments(data, Backend::kCpu);
  ASSERT_TRUE(whole.ok());
  ExpectClose(want.mean, whole->mean, 1e-9);
  ExpectClose(want.m2, whole->m2, 1e-9);
}

TEST(KernelsStatsTest, Int32ColumnsAreExact) {
  const std::vector<int32_t> data = {-3, 7, 7, 2'000'000'000, -2'000'000'000, 1};
  auto m = ComputeMoments(data, Backend::kCpu);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->count, 6u);
  EXPECT_DOUBLE_EQ(m->mean, 12.0 / 6.0);
  EXPECT_EQ(m->min, -2'000'000'000.0);
  EXPECT_EQ(m->max, 2'000'000'000.0);
}

TEST(KernelsStatsTest, EmptyColumnsAreTheIdentityOfMerge) {
  auto empty = ComputeMoments(std::span<const float>(), Backend::kCpu);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, ColumnMoments{});
  EXPECT_EQ(empty->min, std::numeric_limits<double>::infinity());
  const std::vector<float> data = {1, 2, 3};
  auto m = ComputeMoments(data, Backend::kCpu);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(MergeMoments(*empty, *m), *m);
  EXPECT_EQ(MergeMoments(*m, *empty), *m);
  EXPECT_EQ(PopulationStddev(*empty), 0.0);
  EXPECT_DOUBLE_EQ(PopulationStddev(*m), std::sqrt(2.0 / 3.0));
}

// Decision: NaN counts and poisons mean/M2 (a data fault must show), min/max skip it.
TEST(KernelsStatsTest, NanPoisonsMeanButNotMinMax) {
  const std::vector<float> data = {1, NAN, 3};
  auto m = ComputeMoments(data, Backend::kCpu);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->count, 3u);
  EXPECT_TRUE(std::isnan(m->mean));
  EXPECT_EQ(m->min, 1.0);
  EXPECT_EQ(m->max, 3.0);
}

TEST(KernelsStandardizeTest, GivesMeanZeroAndStddevOne) {
  for (const float offset : {0.0f, 250.0f, -1.0e5f}) {
    SCOPED_TRACE(offset);
    const std::vector<float> data = Gaussianish(300'001, offset, 7.5f, 7);
    auto m = ComputeMoments(data, Backend::kCpu);
    ASSERT_TRUE(m.ok());
    std::vector<float> out(data.size());
    COUPLER_ASSERT_OK(Standardize(data, out, m->mean, PopulationStddev(*m), Backend::kCpu));
    long double sum = 0;
    long double squares = 0;
    for (float v : out) sum += v;
    const long double mean = sum / out.size();
    for (float v : out) squares += (v - mean) * (v - mean);
    EXPECT_NEAR(static_cast<double>(mean), 0.0, 1e-5);
    EXPECT_NEAR(std::sqrt(static_cast<double>(squares / out.size())), 1.0, 1e-5);
  }
}

TEST(KernelsStandardizeTest, InPlaceMatchesOutOfPlaceBitForBit) {
  const std::vector<float> data = RandomColumn(10'007, 3);
  std::vector<float> out(data.size());
  COUPLER_ASSERT_OK(Standardize(data, out, 1.25, 3.5, Backend::kCpu));
  std::vector<float> in_place = data;
  COUPLER_ASSERT_OK(Standardize(in_place, in_place, 1.25, 3.5, Backend::kCpu));
  EXPECT_TRUE(SameBits<float>(out, in_place));
  for (size_t i = 0; i < data.size(); i += 101) {
    const float want = static_cast<float>((static_cast<double>(data[i]) - 1.25) / 3.5);
    if (std::isfinite(want)) {
      EXPECT_NEAR(out[i], want, std::fabs(want) * 1e-6f) << i;
    }
  }
}

// Decision: a constant column (stddev 0) standardizes to 0, not NaN or inf.
TEST(KernelsStandardizeTest, ConstantColumnBecomesZero) {
  std::vector<float> data(100, 4.5f);
  COUPLER_ASSERT_OK(Standardize(data, data, 4.5, 0.0, Backend::kCpu));
  for (float v : data) EXPECT_EQ(v, 0.0f);
}

TEST(KernelsStandardizeTest, RefusesBadArguments) {
  std::vector<float> data(8);
  std::vector<float> short_out(7);
  EXPECT_EQ(Standardize(data, short_out, 0, 1, Backend::kCpu).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(Standardize(std::span<const float>(data).first(6),
                        std::span<float>(data).subspan(2, 6), 0, 1, Backend::kCpu)
                .code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coupler::kernels
