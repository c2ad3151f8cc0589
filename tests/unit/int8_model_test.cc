// The arithmetic quantize and evaluate share (runtime/ops/int8_model.h): per-row symmetric
// weights, activations rounded to nearest-even and saturated (NaN to 0), histogram quantiles
// within a bin of the truth and mergeable, and the calibration table read back as written.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/ops/activation_quantize.h"
#include "runtime/ops/int8_model.h"

namespace coupler::ops {
namespace {

using ::testing::HasSubstr;

TEST(Int8ModelTest, WeightsArePerRowSymmetric) {
  // Row 0 spans +-2, row 1 +-0.5 (its own scale keeps its precision), row 2 is all zero.
  const std::vector<float> w = {2.0f, -1.0f, 0.0f, 0.25f, 0.5f, -0.5f, 0.0f, 0.0f, 0.0f};
  const Int8Layer q = QuantizeWeights(w, 3, 3);
  EXPECT_FLOAT_EQ(q.scale[0], 2.0f / 127);
  EXPECT_FLOAT_EQ(q.scale[1], 0.5f / 127);
  EXPECT_EQ(q.scale[2], 1.0f);
  EXPECT_EQ(q.q, (std::vector<int8_t>{127, -64, 0, 64, 127, -127, 0, 0, 0}));
}

TEST(Int8ModelTest, ActivationsRoundToEvenAndSaturate) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // Scale 1 for u8: clip 255.
  const std::vector<float> x = {0.5f, 1.5f, 2.5f, -3.0f, 254.6f, 300.0f, nan, inf, -inf, 7.49f};
  std::vector<uint8_t> u(x.size());
  QuantizeActivations(x, {255.0, false}, u.data());
  EXPECT_EQ(u, (std::vector<uint8_t>{0, 2, 2, 0, 255, 255, 0, 255, 0, 7}));
  std::vector<int8_t> s(x.size());
  QuantizeActivations(x, {127.0, true}, s.data());
  EXPECT_EQ(s, (std::vector<int8_t>{0, 2, 2, -3, 127, 127, 0, 127, -127, 7}));
  // A long run, past any vector width, agrees with the element-at-a-time rule.
  std::vector<float> long_x(1003);
  for (size_t i = 0; i < long_x.size(); ++i) long_x[i] = static_cast<float>(i) * 0.37f - 150.0f;
  std::vector<int8_t> long_q(long_x.size());
  QuantizeActivations(long_x, {127.0, true}, long_q.data());
  for (size_t i = 0; i < long_x.size(); ++i) {
    const float want = std::clamp(std::nearbyint(long_x[i]), -127.0f, 127.0f);
    ASSERT_EQ(long_q[i], static_cast<int8_t>(want)) << i;
  }
}

TEST(Int8ModelTest, HistogramQuantilesAreWithinABinAndMerge) {
  ActivationHistogram all, first, second;
  std::vector<float> values;
  for (int i = 1; i <= 10000; ++i) values.push_back(static_cast<float>(i) / 100.0f);  // 0.01..100
  all.Add(values);
  first.Add(std::span<const float>(values).first(5000));
  second.Add(std::span<const float>(values).subspan(5000));
  first.Merge(second);
  EXPECT_EQ(first.Quantile(0.999), all.Quantile(0.999));
  const double top = all.Quantile(1.0);
  EXPECT_GE(top, 100.0);
  EXPECT_LT(top, 100.0 * 1.023);
  const double median = all.Quantile(0.5);
  EXPECT_GE(median, 50.0);
  EXPECT_LT(median, 50.0 * 1.023);
  EXPECT_FALSE(all.saw_negative());
  ActivationHistogram negative;
  negative.Add(std::vector<float>{-1.0f});
  EXPECT_TRUE(negative.saw_negative());
  ActivationHistogram zeros;
  zeros.Add(std::vector<float>(10, 0.0f));
  EXPECT_EQ(zeros.Quantile(1.0), 0.0);
  EXPECT_EQ(ActivationQuant({0.0, false}).Scale(), 1.0f);  // an all-zero input still quantizes
}

TEST(Int8ModelTest, CalibrationTableReadsBackAsWritten) {
  Calibration c;
  c.layers = {{3.5, true}, {12.25, false}};
  c.widths = {64, 128};
  c.rows = 1437;
  c.percentile = 99.99;
  c.weights_hash = 0xF00DFACE12345678ull;  // the top bit set: int64 storage keeps every bit
  Result<io::Table> table = CalibrationTable(c);
  ASSERT_TRUE(table.ok());
  Result<Calibration> back = ReadCalibration(*table, "cal.npy");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->layers[0].clip, 3.5);
  EXPECT_TRUE(back->layers[0].is_signed);
  EXPECT_FALSE(back->layers[1].is_signed);
  EXPECT_EQ(back->widths, c.widths);
  EXPECT_EQ(back->rows, 1437);
  EXPECT_EQ(back->weights_hash, c.weights_hash);
  // A table missing a column, or with a negative clip, is not a calibration.
  io::Table bad;
  ASSERT_TRUE(bad.AddColumn(io::Column::Int32("layer", {0})).ok());
  Result<Calibration> refused = ReadCalibration(bad, "bad.npy");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("bad.npy: not a quantize calibration"));
  c.layers[1].clip = -1;
  refused = ReadCalibration(*CalibrationTable(c), "neg.npy");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("row 1"));
}

}  // namespace
}  // namespace coupler::ops
