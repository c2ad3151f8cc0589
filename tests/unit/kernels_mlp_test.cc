// The MLP's elementwise kernels: bias + ReLU and its backward mask in every storage, bias
// gradients, softmax cross-entropy (closed form, finite differences, accuracy count, huge
// logits), the fp32 <-> 16-bit copies (exhaustive widening, RNE ties) and the finiteness check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "kernels/train_kernels.h"
#include "runtime/precision/half.h"
#include "tests/kernels/kernel_test_util.h"

namespace coupler::kernels {
namespace {

// SoftmaxCrossEntropy's loss sum as a value (the kernel answers Ok on the CPU).
double LossSum(ConstMatrix logits, const int32_t* labels, float grad_scale, MutMatrix* dlogits,
               size_t* correct) {
  double loss = NAN;
  EXPECT_TRUE(SoftmaxCrossEntropy(logits, labels, grad_scale, dlogits, &loss, correct).ok());
  return loss;
}

// AllFinite's verdict as a value.
bool Finite(const float* x, size_t n) {
  bool finite = false;
  EXPECT_TRUE(AllFinite(x, n, &finite).ok());
  return finite;
}

constexpr ElementType kStorages[] = {ElementType::kFloat32, ElementType::kFloat16,
                                     ElementType::kBFloat16};

const char* Name(ElementType s) {
  return s == ElementType::kFloat32 ? "f32" : (s == ElementType::kFloat16 ? "f16" : "bf16");
}

// n elements of one element type.
struct Buffer {
  ElementType storage;
  std::vector<float> f32;
  std::vector<uint16_t> bits16;
  Buffer(ElementType s, size_t n) : storage(s) {
    if (s == ElementType::kFloat32) {
      f32.resize(n);
    } else {
      bits16.resize(n);
    }
  }
  void Set(size_t i, float v) {
    if (storage == ElementType::kFloat32) {
      f32[i] = v;
    } else {
      bits16[i] = storage == ElementType::kFloat16 ? precision::FloatToHalfBits(v)
                                                   : precision::FloatToBf16Bits(v);
    }
  }
  float Get(size_t i) const {
    if (storage == ElementType::kFloat32) return f32[i];
    return storage == ElementType::kFloat16 ? precision::HalfBitsToFloat(bits16[i])
                                            : precision::Bf16BitsToFloat(bits16[i]);
  }
  // What storing v rounds to.
  float Rounded(float v) const {
    if (storage == ElementType::kFloat32) return v;
    return storage == ElementType::kFloat16
               ? precision::HalfBitsToFloat(precision::FloatToHalfBits(v))
               : precision::Bf16BitsToFloat(precision::FloatToBf16Bits(v));
  }
  const void* data() const {
    return storage == ElementType::kFloat32 ? static_cast<const void*>(f32.data()) : bits16.data();
  }
  void* data() {
    return storage == ElementType::kFloat32 ? static_cast<void*>(f32.data()) : bits16.data();
  }
  ConstMatrix View(size_t rows, size_t cols) const { return {data(), storage, rows, cols}; }
  MutMatrix MutView(size_t rows, size_t cols) { return {data(), storage, rows, cols}; }
};

// 3 x 37: every row has a 16-wide block part and a tail.
constexpr size_t kRows = 3;
constexpr size_t kCols = 37;

TEST(KernelsMlpTest, AddBiasActivateAddsRoundsAndClampsNegatives) {
  // Wide rows, and narrow ones (a classifier's logits) that are added kBlock rows at a time
  // against a repeated bias, with rows left over.
  const std::pair<size_t, size_t> shapes[] = {{kRows, kCols}, {37, 10}, {16, 1}, {35, 15}};
  for (const auto& [rows, cols] : shapes) {
    for (ElementType s : kStorages) {
      for (bool relu : {false, true}) {
        SCOPED_TRACE(std::string(Name(s)) + (relu ? " relu " : " linear ") +
                     std::to_string(rows) + "x" + std::to_string(cols));
        Buffer y(s, rows * cols);
        std::vector<float> bias(cols);
        SplitMix64 rng(11);
        for (float& b : bias) b = rng.Uniform(-1.0f, 1.0f);
        for (size_t i = 0; i < rows * cols; ++i) y.Set(i, rng.Uniform(-2.0f, 2.0f));
        y.Set(5, std::numeric_limits<float>::quiet_NaN());
        const Buffer before = y;
        EXPECT_TRUE(AddBiasActivate(y.MutView(rows, cols), bias.data(), relu).ok());
        for (size_t i = 0; i < rows * cols; ++i) {
          if (i == 5) {
            EXPECT_TRUE(std::isnan(y.Get(i))) << "NaN must survive ReLU to reach the loss";
            continue;
          }
          float expected = y.Rounded(before.Get(i) + bias[i % cols]);
          if (relu && expected < 0.0f) expected = 0.0f;
          ASSERT_EQ(y.Get(i), expected) << i;
        }
      }
    }
  }
}

TEST(KernelsMlpTest, ReluBackwardZeroesGradientWhereOutputIsNotPositive) {
  const float y_values[] = {-1.0f, 0.0f, -0.0f, 0.5f, 2.0f, 1e-3f, -3.0f};
  for (ElementType ys : kStorages) {
    for (ElementType ds : kStorages) {
      SCOPED_TRACE(std::string("y=") + Name(ys) + " dy=" + Name(ds));
      Buffer y(ys, kRows * kCols);
      Buffer dy(ds, kRows * kCols);
      for (size_t i = 0; i < kRows * kCols; ++i) {
        y.Set(i, y_values[i % std::size(y_values)]);
        dy.Set(i, 0.25f + static_cast<float>(i));
      }
      const Buffer before = dy;
      EXPECT_TRUE(ReluBackward(y.View(kRows, kCols), dy.MutView(kRows, kCols)).ok());
      for (size_t i = 0; i < kRows * kCols; ++i) {
        const bool kept = y.Get(i) > 0.0f;
        EXPECT_EQ(dy.Get(i), kept ? before.Get(i) : 0.0f) << i << " y=" << y.Get(i);
      }
    }
  }
}

TEST(KernelsMlpTest, BiasGradAccumulatesColumnSumsOntoExistingValues) {
  for (ElementType s : kStorages) {
    SCOPED_TRACE(Name(s));
    constexpr size_t kManyRows = 50;
    Buffer dy(s, kManyRows * kCols);
    SplitMix64 rng(5);
    for (size_t i = 0; i < kManyRows * kCols; ++i) dy.Set(i, rng.Uniform(-1.0f, 1.0f));
    std::vector<float> grad(kCols);
    for (size_t j = 0; j < kCols; ++j) grad[j] = static_cast<float>(j);
    EXPECT_TRUE(BiasGradAccumulate(dy.View(kManyRows, kCols), grad.data()).ok());
    for (size_t j = 0; j < kCols; ++j) {
      double expected = static_cast<double>(j);
      for (size_t r = 0; r < kManyRows; ++r) expected += dy.Get(r * kCols + j);
      EXPECT_NEAR(grad[j], expected, 1e-5 * (50.0 + static_cast<double>(j))) << j;
    }
  }
}

// Closed form: loss = logsumexp(x) - x[label]; d loss / dx = softmax(x) - onehot(label).
TEST(KernelsMlpTest, SoftmaxCrossEntropyMatchesClosedForm) {
  constexpr size_t kBatch = 6;
  constexpr size_t kClasses = 21;
  for (ElementType in_s : kStorages) {
    for (ElementType out_s : kStorages) {
      SCOPED_TRACE(std::string("logits=") + Name(in_s) + " dlogits=" + Name(out_s));
      Buffer logits(in_s, kBatch * kClasses);
      SplitMix64 rng(3);
      for (size_t i = 0; i < kBatch * kClasses; ++i) logits.Set(i, rng.Uniform(-4.0f, 4.0f));
      const std::vector<int32_t> labels = {0, 20, 3, 3, 11, 7};
      Buffer dlogits(out_s, kBatch * kClasses);
      MutMatrix dview = dlogits.MutView(kBatch, kClasses);
      constexpr float kGradScale = 0.125f;
      const double loss =
          LossSum(logits.View(kBatch, kClasses), labels.data(), kGradScale, &dview, nullptr);
      double expected_loss = 0.0;
      for (size_t r = 0; r < kBatch; ++r) {
        double row_max = -INFINITY;
        for (size_t j = 0; j < kClasses; ++j) {
          row_max = std::max<double>(row_max, logits.Get(r * kClasses + j));
        }
        double sum = 0.0;
        for (size_t j = 0; j < kClasses; ++j) {
          sum += std::exp(logits.Get(r * kClasses + j) - row_max);
        }
        expected_loss += std::log(sum) + row_max - logits.Get(r * kClasses + labels[r]);
        for (size_t j = 0; j < kClasses; ++j) {
          const double p = std::exp(logits.Get(r * kClasses + j) - row_max) / sum;
          const double expected =
              (p - (static_cast<int32_t>(j) == labels[r] ? 1.0 : 0.0)) * kGradScale;
          const double unit = out_s == ElementType::kFloat32   ? 0.0
                              : out_s == ElementType::kFloat16 ? 0x1p-11
                                                               : 0x1p-8;
          EXPECT_NEAR(dlogits.Get(r * kClasses + j), expected, unit * std::fabs(expected) + 1e-6)
              << r << "," << j;
        }
      }
      EXPECT_NEAR(loss, expected_loss, 1e-5 * expected_loss);
      // Evaluation without a gradient gives the same loss.
      EXPECT_EQ(LossSum(logits.View(kBatch, kClasses), labels.data(), kGradScale, nullptr,
                        nullptr),
                loss);
    }
  }
}

// Independent of the closed form: central differences of the returned loss.
TEST(KernelsMlpTest, SoftmaxCrossEntropyGradientMatchesFiniteDifferences) {
  constexpr size_t kBatch = 2;
  constexpr size_t kClasses = 5;
  std::vector<float> logits = {0.3f, -1.2f, 2.0f, 0.7f, 0.0f, -0.5f, 1.5f, 1.4f, -2.0f, 0.9f};
  const std::vector<int32_t> labels = {2, 4};
  std::vector<float> dlogits(kBatch * kClasses);
  MutMatrix dview{dlogits.data(), ElementType::kFloat32, kBatch, kClasses};
  const ConstMatrix view{logits.data(), ElementType::kFloat32, kBatch, kClasses};
  LossSum(view, labels.data(), 1.0f, &dview, nullptr);
  constexpr float kH = 1e-2f;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float x = logits[i];
    logits[i] = x + kH;
    const double up = LossSum(view, labels.data(), 1.0f, nullptr, nullptr);
    logits[i] = x - kH;
    const double down = LossSum(view, labels.data(), 1.0f, nullptr, nullptr);
    logits[i] = x;
    EXPECT_NEAR(dlogits[i], (up - down) / (2.0 * kH), 1e-3) << i;
  }
}

TEST(KernelsMlpTest, SoftmaxCrossEntropyCountsRowsWhoseArgmaxIsTheLabel) {
  // Row 2 ties columns 0 and 2: the first maximal column is the prediction.
  const std::vector<float> logits = {1, 5, 2, 9, 0, 1, 3, 0, 3, 0.5f, 0.5f, 0.4f};
  const std::vector<int32_t> labels = {1, 0, 2, 0};  // right, right, wrong (tie), right
  size_t correct = 10;                               // accumulates onto the caller's count
  LossSum({logits.data(), ElementType::kFloat32, 4, 3}, labels.data(), 1.0f, nullptr, &correct);
  EXPECT_EQ(correct, 13u);
}

TEST(KernelsMlpTest, SoftmaxCrossEntropyStaysFiniteForHugeLogits) {
  for (ElementType s : kStorages) {
    SCOPED_TRACE(Name(s));
    Buffer logits(s, 6);
    const float values[] = {1e4f, -1e4f, 0.0f, 1e4f, 1e4f, -1e4f};
    for (size_t i = 0; i < 6; ++i) logits.Set(i, values[i]);
    const std::vector<int32_t> labels = {1, 0};
    Buffer dlogits(s, 6);
    MutMatrix dview = dlogits.MutView(2, 3);
    const double loss = LossSum(logits.View(2, 3), labels.data(), 1.0f, &dview, nullptr);
    // Row 0: the label sits ~2e4 below the max (exactly what the storage holds); row 1: two
    // equal maxima, the label one of them.
    const double gap = static_cast<double>(logits.Get(0)) - logits.Get(1);
    EXPECT_NEAR(loss, gap + std::log(2.0), 1e-6 * gap);
    const float expected_grad[] = {1.0f, -1.0f, 0.0f, -0.5f, 0.5f, 0.0f};
    for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(dlogits.Get(i), expected_grad[i], 1e-6) << i;
  }
}

TEST(KernelsMlpDeathTest, SoftmaxCrossEntropyRejectsOutOfRangeLabels) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::vector<float> logits = {1, 2, 3, 4};
  const std::vector<int32_t> too_big = {0, 2};
  const std::vector<int32_t> negative = {-1, 0};
  EXPECT_DEATH(
      LossSum({logits.data(), ElementType::kFloat32, 2, 2}, too_big.data(), 1, nullptr, nullptr),
      "label 2 of row 1 outside \\[0, 2\\)");
  EXPECT_DEATH(
      LossSum({logits.data(), ElementType::kFloat32, 2, 2}, negative.data(), 1, nullptr, nullptr),
      "label -1 of row 0");
}

// Every 16-bit pattern widens to exactly what precision/half.h decodes (NaNs made quiet alike),
// and rounding a widened non-NaN value back gives the same bits.
TEST(KernelsMlpTest, WidenCopyIsExactForEvery16BitPatternAndRoundCopyInvertsIt) {
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (ElementType s : {ElementType::kFloat16, ElementType::kBFloat16}) {
    SCOPED_TRACE(Name(s));
    std::vector<float> wide(all.size());
    EXPECT_TRUE(WidenCopy(all.data(), s, wide.data(), all.size()).ok());
    std::vector<float> expected(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      expected[i] = s == ElementType::kFloat16 ? precision::HalfBitsToFloat(all[i])
                                               : precision::Bf16BitsToFloat(all[i]);
    }
    EXPECT_TRUE(SameBits<float>(expected, wide));
    std::vector<uint16_t> back(all.size());
    EXPECT_TRUE(RoundCopy(wide.data(), back.data(), s, wide.size()).ok());
    for (size_t i = 0; i < all.size(); ++i) {
      if (std::isnan(wide[i])) {
        EXPECT_TRUE(std::isnan(s == ElementType::kFloat16 ? precision::HalfBitsToFloat(back[i])
                                                          : precision::Bf16BitsToFloat(back[i])));
      } else {
        ASSERT_EQ(back[i], all[i]) << i;
      }
    }
  }
}

TEST(KernelsMlpTest, RoundCopyRoundsEveryFloatClassLikePrecisionHalf) {
  const std::vector<float> column = RandomColumn(4099, 77);  // NaNs, infs, subnormals, ties
  std::vector<uint16_t> fp16(column.size());
  std::vector<uint16_t> bf16(column.size());
  EXPECT_TRUE(RoundCopy(column.data(), fp16.data(), ElementType::kFloat16, column.size()).ok());
  EXPECT_TRUE(RoundCopy(column.data(), bf16.data(), ElementType::kBFloat16, column.size()).ok());
  std::vector<uint16_t> expected16(column.size());
  std::vector<uint16_t> expected_bf(column.size());
  for (size_t i = 0; i < column.size(); ++i) {
    expected16[i] = precision::FloatToHalfBits(column[i]);
    expected_bf[i] = precision::FloatToBf16Bits(column[i]);
  }
  EXPECT_TRUE(SameBits<uint16_t>(expected16, fp16));
  EXPECT_TRUE(SameBits<uint16_t>(expected_bf, bf16));
  std::vector<float> copy(column.size());
  EXPECT_TRUE(RoundCopy(column.data(), copy.data(), ElementType::kFloat32, column.size()).ok());
  EXPECT_TRUE(SameBits<float>(column, copy));
  EXPECT_TRUE(WidenCopy(column.data(), ElementType::kFloat32, copy.data(), column.size()).ok());
  EXPECT_TRUE(SameBits<float>(column, copy));
}

TEST(KernelsMlpTest, RoundCopyBreaksTiesToEven) {
  // Halfway between 1 and the next value rounds down to the even 1; halfway above that next
  // (odd) value rounds up to the even one after it.
  const float fp16_ties[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f};
  uint16_t out[2];
  EXPECT_TRUE(RoundCopy(fp16_ties, out, ElementType::kFloat16, 2).ok());
  EXPECT_EQ(out[0], 0x3C00);
  EXPECT_EQ(out[1], 0x3C02);
  const float bf16_ties[] = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f};
  EXPECT_TRUE(RoundCopy(bf16_ties, out, ElementType::kBFloat16, 2).ok());
  EXPECT_EQ(out[0], 0x3F80);
  EXPECT_EQ(out[1], 0x3F82);
}

TEST(KernelsMlpTest, ScaleMultipliesEveryElement) {
  std::vector<float> x(37);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 3.0f;
  EXPECT_TRUE(Scale(x.data(), x.size(), -0.5f).ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], (static_cast<float>(i) - 3.0f) * -0.5f);
}

TEST(KernelsMlpTest, AllFiniteFindsInfAndNanAnywhere) {
  std::vector<float> x(53);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 1e30f;
  x[1] = std::numeric_limits<float>::max();
  x[2] = std::numeric_limits<float>::denorm_min();
  x[3] = -0.0f;
  EXPECT_TRUE(Finite(x.data(), x.size()));
  EXPECT_TRUE(Finite(x.data(), 0));
  const float bad_values[] = {INFINITY, -INFINITY, NAN, -NAN};
  for (float bad : bad_values) {
    for (size_t pos : {size_t{0}, size_t{15}, size_t{16}, size_t{40}, size_t{52}}) {
      std::vector<float> y = x;
      y[pos] = bad;
      EXPECT_FALSE(Finite(y.data(), y.size())) << bad << " at " << pos;
    }
  }
}

}  // namespace
}  // namespace coupler::kernels
