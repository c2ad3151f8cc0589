// The element functions both twins share (kernels/elementwise.h), checked on the host: what the
// CPU tests establish here is what the GPU computes too.
#include "kernels/elementwise.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/filter_map.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(ElementwiseTest, StandardizeValueRoundsOnceFromFloat64) {
  EXPECT_EQ(StandardizeValue(3.0f, 1.0, 0.5), 1.0f);
  // In float32 the mean would round to 1e7 and give 4; float64 keeps its quarter.
  EXPECT_EQ(StandardizeValue(10000001.0f, 10000000.25, 4.0), 3.0f);
  // A product below FLT_MIN but representable rounds to a subnormal, not to zero.
  EXPECT_EQ(StandardizeValue(1.0f, 0.0, 0x1p-140), 0x1p-140f);
  EXPECT_EQ(StandardizeValue(1.0f, 0.0, 0x1p-151), 0.0f);
}

TEST(ElementwiseTest, StandardizeValueOfAConstantColumnIsZero) {
  EXPECT_EQ(StandardizeValue(5.0f, 5.0, 0.0), 0.0f);
  EXPECT_EQ(StandardizeValue(-1.0e30f, 5.0, 0.0), 0.0f);
  // NaN and infinities stay faults: inf * 0 is NaN.
  EXPECT_TRUE(std::isnan(StandardizeValue(std::nanf(""), 5.0, 0.0)));
  EXPECT_TRUE(std::isnan(StandardizeValue(kInf, 5.0, 0.0)));
  EXPECT_EQ(StandardizeValue(kInf, 5.0, 2.0), kInf);
}

TEST(ElementwiseTest, FilterMapValueKeepsProductsAboveTheThreshold) {
  FilterMapRow row = FilterMapValue(2.0f, 3.0f, 5.5f);
  EXPECT_EQ(row.keep, 1);
  EXPECT_EQ(row.root, std::sqrt(6.0f));
  row = FilterMapValue(2.0f, 3.0f, 6.0f);  // equal is not above
  EXPECT_EQ(row.keep, 0);
  EXPECT_EQ(row.root, 0.0f);
  row = FilterMapValue(std::nanf(""), 1.0f, -kInf);  // NaN is never kept
  EXPECT_EQ(row.keep, 0);
  EXPECT_EQ(row.root, 0.0f);
  // A negative product above a negative threshold is kept, and its root is NaN.
  row = FilterMapValue(-1.0f, 2.0f, -kInf);
  EXPECT_EQ(row.keep, 1);
  EXPECT_TRUE(std::isnan(row.root));
  // The product is a float32 product: 1e20f * 1e20f overflows to inf before any comparison.
  row = FilterMapValue(1.0e20f, 1.0e20f, 3.0e38f);
  EXPECT_EQ(row.keep, 1);
  EXPECT_EQ(row.root, kInf);
}

// The CPU twin's vector body and its scalar tail both agree with the element function, row for
// row (n = 4k + 3 puts rows in both), so the function the GPU runs is the CPU's definition.
TEST(ElementwiseTest, FilterMapCpuAgreesWithFilterMapValue) {
  constexpr double kNegativeInfinity = -std::numeric_limits<double>::infinity();
  for (const double threshold : {0.0, -1.0, 1e-30, kNegativeInfinity}) {
    SCOPED_TRACE(threshold);
    const size_t n = 4003;
    const std::vector<float> a = RandomColumn(n, 1);
    const std::vector<float> b = RandomColumn(n, 2);
    const float t = FloatThresholdFor(threshold);
    std::vector<uint8_t> want_keep(n);
    std::vector<float> want_value;
    for (size_t i = 0; i < n; ++i) {
      const FilterMapRow row = FilterMapValue(a[i], b[i], t);
      want_keep[i] = row.keep;
      if (row.keep != 0) want_value.push_back(row.root);
    }
    std::vector<uint8_t> keep(n);
    std::vector<float> value(n);
    auto kept = FilterMap(a, b, threshold, keep, value, Backend::kCpu);
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    EXPECT_EQ(keep, want_keep);
    value.resize(*kept);
    EXPECT_TRUE(SameBits<float>(want_value, value));
  }
}

}  // namespace
}  // namespace coupler::kernels
