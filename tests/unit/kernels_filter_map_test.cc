// filter_map: bit-identical to the plain scalar loop (float32 product, exact comparison with the
// double threshold, IEEE sqrt, row order kept), and Compact carries other columns along.
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/filter_map.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

// The definition filter_map must match, written the obvious way.
std::vector<float> ScalarFilterMap(const std::vector<float>& a, const std::vector<float>& b,
                                   double threshold, std::vector<size_t>* rows) {
  std::vector<float> out;
  for (size_t i = 0; i < a.size(); ++i) {
    const float v = a[i] * b[i];
    if (static_cast<double>(v) > threshold) {
      out.push_back(std::sqrt(v));
      rows->push_back(i);
    }
  }
  return out;
}

TEST(KernelsFilterMapTest, MatchesTheScalarLoopBitForBit) {
  const double thresholds[] = {0.0, -1.0, 0.1, 1.0, 2.5e-7, 1e30, -INFINITY, INFINITY, NAN,
                               -1e300, 1e300};
  for (size_t n : {size_t{0}, size_t{1}, size_t{17}, size_t{100'003}}) {
    const std::vector<float> a = RandomColumn(n, 11 + n);
    const std::vector<float> b = RandomColumn(n, 23 + n);
    for (const double threshold : thresholds) {
      SCOPED_TRACE("n=" + std::to_string(n) + " threshold=" + std::to_string(threshold));
      std::vector<size_t> want_rows;
      const std::vector<float> want = ScalarFilterMap(a, b, threshold, &want_rows);
      std::vector<uint8_t> keep(n);
      std::vector<float> value(n);
      auto kept = FilterMap(a, b, threshold, keep, value, Backend::kCpu);
      ASSERT_TRUE(kept.ok()) << kept.status().ToString();
      ASSERT_EQ(*kept, want.size());
      value.resize(*kept);
      EXPECT_TRUE(SameBits<float>(want, value));
      std::vector<size_t> rows;
      for (size_t i = 0; i < n; ++i) {
        if (keep[i] != 0) rows.push_back(i);
      }
      EXPECT_EQ(rows, want_rows);
    }
  }
}

TEST(KernelsFilterMapTest, ThresholdIsComparedAsTheDoubleItIs) {
  // 0.1f is slightly above 0.1, so 0.1f * 1 > 0.1 although float(0.1) > float(0.1) is false.
  const std::vector<float> a = {0.1f, 0.099999994f};
  const std::vector<float> b = {1.0f, 1.0f};
  std::vector<uint8_t> keep(2);
  std::vector<float> value(2);
  auto kept = FilterMap(a, b, 0.1, keep, value, Backend::kCpu);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, 1u);
  EXPECT_THAT(keep, ::testing::ElementsAre(1, 0));

  SplitMix64 rng(5);
  for (int i = 0; i < 200'000; ++i) {
    const double t = std::ldexp(static_cast<double>(rng.Next() >> 11) * 0x1p-53 - 0.5,
                                static_cast<int>(rng.Next() % 300) - 150);
    const float v = precision::Float32FromBits(static_cast<uint32_t>(rng.Next()));
    ASSERT_EQ(v > FloatThresholdFor(t), static_cast<double>(v) > t) << v << " vs " << t;
  }
}

TEST(KernelsFilterMapTest, CompactKeepsOrderForEveryElementType) {
  const std::vector<uint8_t> keep = {1, 0, 0, 1, 1, 0};
  const std::vector<int32_t> ints = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> int_out(6);
  auto n = Compact<int32_t>(ints, keep, int_out, Backend::kCpu);
  ASSERT_TRUE(n.ok());
  int_out.resize(*n);
  EXPECT_THAT(int_out, ::testing::ElementsAre(1, 4, 5));
  const std::vector<double> wide = {1.5, 2.5, 3.5, 4.5, 5.5, 6.5};
  std::vector<double> wide_out(6);
  ASSERT_EQ(*Compact<double>(wide, keep, wide_out, Backend::kCpu), 3u);
  EXPECT_EQ(wide_out[2], 5.5);
  const std::vector<uint16_t> half = {10, 20, 30, 40, 50, 60};
  std::vector<uint16_t> half_out(6);
  ASSERT_EQ(*Compact<uint16_t>(half, keep, half_out, Backend::kCpu), 3u);
  EXPECT_EQ(half_out[1], 40);
}

TEST(KernelsFilterMapTest, RefusesMismatchedOrOverlappingColumns) {
  std::vector<float> a(4, 1.0f);
  std::vector<float> b(3, 1.0f);
  std::vector<uint8_t> keep(4);
  std::vector<float> value(4);
  EXPECT_EQ(FilterMap(a, b, 0, keep, value, Backend::kCpu).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(FilterMap(a, a, 0, keep, a, Backend::kCpu).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace coupler::kernels
