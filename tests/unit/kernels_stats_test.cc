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

// Decision (pandas' skipna): NaN is a missing value. count is the values present; mean, M2,
// min and max are over them. {1, NaN, 3, NaN, 8}: count 3, mean 4, M2 = 9 + 1 + 16 = 26, so
// the population variance (ddof 0, what standardize divides by) is 26/3 and pandas' var()
// (ddof 1) is 26/2 = 13.
TEST(KernelsStatsTest, MissingValuesAreSkippedAsPandasDoes) {
  const std::vector<float> data = {1, NAN, 3, NAN, 8};
  auto m = ComputeMoments(data, Backend::kCpu);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->count, 3u);
  EXPECT_DOUBLE_EQ(m->mean, 4.0);
  EXPECT_DOUBLE_EQ(m->m2, 26.0);
  EXPECT_DOUBLE_EQ(m->m2 / static_cast<double>(m->count - 1), 13.0);  // pandas' var()
  EXPECT_DOUBLE_EQ(PopulationStddev(*m), std::sqrt(26.0 / 3.0));
  EXPECT_EQ(m->min, 1.0);
  EXPECT_EQ(m->max, 8.0);
}

// Missing values spread over many blocks (and a block with nothing present) give what one pass
// over the present values gives, and merging shards' partials still equals one pass.
TEST(KernelsStatsTest, MissingValuesAcrossBlocksAndShardsEqualThePresentValues) {
  std::vector<float> data = Gaussianish(20'000, 5.0f, 2.0f, 11);
  std::vector<float> present;
  for (size_t i = 0; i < data.size(); ++i) {
    if (i % 7 == 3 || (i >= 4096 && i < 6144)) data[i] = NAN;  // [4096, 6144): one whole block
    if (!std::isnan(data[i])) present.push_back(data[i]);
  }
  auto all = ComputeMoments(data, Backend::kCpu);
  ASSERT_TRUE(all.ok());
  const ColumnMoments want = Reference(present);
  EXPECT_EQ(all->count, want.count);
  EXPECT_NEAR(all->mean, want.mean, 1e-12 * std::fabs(want.mean));
  EXPECT_NEAR(all->m2, want.m2, 1e-9 * want.m2);
  EXPECT_EQ(all->min, want.min);
  EXPECT_EQ(all->max, want.max);
  auto a = ComputeMoments(std::span<const float>(data).first(5000), Backend::kCpu);
  auto b = ComputeMoments(std::span<const float>(data).subspan(5000), Backend::kCpu);
  ASSERT_TRUE(a.ok() && b.ok());
  const ColumnMoments merged = MergeMoments(*a, *b);
  EXPECT_EQ(merged.count, want.count);
  EXPECT_NEAR(merged.mean, want.mean, 1e-12 * std::fabs(want.mean));
  EXPECT_NEAR(merged.m2, want.m2, 1e-9 * want.m2);
}

TEST(KernelsStatsTest, AColumnWithNothingPresentIsTheEmptyColumn) {
  const std::vector<float> data(3000, NAN);
  auto m = ComputeMoments(data, Backend::kCpu);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, ColumnMoments{});
}

// A missing value stays missing; the others use the stats of the present ones.
TEST(KernelsStandardizeTest, MissingValuesStayMissing) {
  const std::vector<float> data = {1, NAN, 3, NAN, 8};
  auto m = ComputeMoments(data, Backend::kCpu);
  ASSERT_TRUE(m.ok());
  std::vector<float> out(data.size());
  const double stddev = PopulationStddev(*m);
  COUPLER_ASSERT_OK(Standardize(data, out, m->mean, stddev, Backend::kCpu));
  EXPECT_FLOAT_EQ(out[0], static_cast<float>(-3.0 / stddev));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_FLOAT_EQ(out[2], static_cast<float>(-1.0 / stddev));
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_FLOAT_EQ(out[4], static_cast<float>(4.0 / stddev));
  // Constant present values: 0 where present, NaN where missing.
  std::vector<float> constant = {2, NAN, 2};
  COUPLER_ASSERT_OK(Standardize(constant, constant, 2.0, 0.0, Backend::kCpu));
  EXPECT_EQ(constant[0], 0.0f);
  EXPECT_TRUE(std::isnan(constant[1]));
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
