// The memory planner: byte counts for a hand-computed MLP shape in fp32 and fp16, and the
// micro-batch choice at the exact edges of the budget and of the global-batch divisibility.
#include "train/memory/memory_planner.h"

#include <string>

#include <gtest/gtest.h>

namespace coupler::memory {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// layers {64, 128, 10}:
//   W = 64*128 + 128*10 = 9472 weights, biases = 128 + 10 = 138, P = 9610.
constexpr size_t kWeights = 9472;
constexpr size_t kParams = 9610;

ModelShape Shape(OptimizerKind optimizer, size_t compute_bytes) {
  ModelShape shape;
  shape.layers = {64, 128, 10};
  shape.optimizer = optimizer;
  shape.compute_bytes = compute_bytes;
  return shape;
}

TEST(MemoryPlannerTest, Fp32AdamWHasNoComputeCopiesOrWorkspace) {
  const MemoryEstimate e = EstimateMemory(Shape(OptimizerKind::kAdamW, 4), kMiB);
  EXPECT_EQ(e.parameters, kParams);
  // masters 4P + gradients 4P + two moments 8P = 16P = 153760.
  EXPECT_EQ(e.fixed_bytes, 153760u);
  // input 4*64 + label 4 + outputs 4*(128 + 10) + two gradient buffers 2*4*128 = 1836.
  EXPECT_EQ(e.per_sample_bytes, 1836u);
  EXPECT_EQ(e.Total(0), 153760u);
  EXPECT_EQ(e.Total(32), 153760u + 32u * 1836u);
}

TEST(MemoryPlannerTest, Fp16AdamWAddsWeightCopiesAndWorkspace) {
  const MemoryEstimate e = EstimateMemory(Shape(OptimizerKind::kAdamW, 2), kMiB);
  EXPECT_EQ(e.parameters, kParams);
  // 16P + fp16 copies of the weights only (2W = 18944) + 1 MiB workspace = 1221280.
  EXPECT_EQ(e.fixed_bytes, 16 * kParams + 2 * kWeights + kMiB);
  EXPECT_EQ(e.fixed_bytes, 1221280u);
  // staged input 4*64 + label 4 + rounded input 2*64 + outputs 2*138 + 2*2*128 = 1176.
  EXPECT_EQ(e.per_sample_bytes, 1176u);
}

TEST(MemoryPlannerTest, SgdKeepsOneMomentumWord) {
  const MemoryEstimate e = EstimateMemory(Shape(OptimizerKind::kSgd, 4), kMiB);
  EXPECT_EQ(e.fixed_bytes, 12 * kParams);
  EXPECT_EQ(e.fixed_bytes, 115320u);
  EXPECT_EQ(e.per_sample_bytes, 1836u);
}

TEST(MemoryPlannerTest, NoGradientBufferIsSizedForTheInput) {
  ModelShape shape;
  shape.layers = {300, 20, 5};
  shape.compute_bytes = 4;
  const MemoryEstimate e = EstimateMemory(shape, 0);
  // input 1200 + label 4 + outputs 4*25 + 2*4*20 (the widest layer after the input) = 1464.
  EXPECT_EQ(e.per_sample_bytes, 1464u);
}

// Fixed 1000 bytes, 100 per sample: m samples need exactly 1000 + 100m.
MemoryEstimate Simple() {
  MemoryEstimate e;
  e.fixed_bytes = 1000;
  e.per_sample_bytes = 100;
  return e;
}

size_t Pick(size_t budget, size_t max_micro_batch, size_t must_divide) {
  auto picked = PickMicroBatch(Simple(), budget, max_micro_batch, must_divide);
  EXPECT_TRUE(picked.ok()) << picked.status().ToString();
  return picked.ok() ? *picked : 0;
}

TEST(PickMicroBatchTest, BudgetExactlyFittingMIsEnough) {
  EXPECT_EQ(Pick(1700, 64, 0), 7u);
  EXPECT_EQ(Pick(1699, 64, 0), 6u);
  EXPECT_EQ(Pick(1799, 64, 0), 7u);
  EXPECT_EQ(Pick(1100, 64, 0), 1u);
}

TEST(PickMicroBatchTest, NeverExceedsTheMaximum) {
  EXPECT_EQ(Pick(1000000, 16, 0), 16u);
  EXPECT_EQ(Pick(1700, 7, 0), 7u);
  EXPECT_EQ(Pick(1700, 5, 0), 5u);
}

TEST(PickMicroBatchTest, PicksADivisorOfTheGlobalBatch) {
  EXPECT_EQ(Pick(1700, 64, 12), 6u);   // 7 fits but does not divide 12
  EXPECT_EQ(Pick(1700, 64, 7), 7u);
  EXPECT_EQ(Pick(1700, 64, 14), 7u);
  EXPECT_EQ(Pick(1699, 64, 14), 2u);   // 6 fits; the largest divisor of 14 up to 6 is 2
  EXPECT_EQ(Pick(1700, 64, 13), 1u);   // prime: only 1 divides
  EXPECT_EQ(Pick(1000000, 16, 48), 16u);
  EXPECT_EQ(Pick(1000000, 10, 48), 8u);
}

TEST(PickMicroBatchTest, ZeroBudgetMeansUnlimited) {
  EXPECT_EQ(Pick(0, 64, 0), 64u);
  EXPECT_EQ(Pick(0, 64, 48), 48u);
  EXPECT_EQ(Pick(0, 40, 48), 24u);
}

TEST(PickMicroBatchTest, HugeBudgetDoesNotOverflow) {
  EXPECT_EQ(Pick(~size_t{0}, ~size_t{0}, 0), (~size_t{0} - 1000) / 100);
}

TEST(PickMicroBatchTest, ReportsWhyNotEvenOneSampleFits) {
  auto picked = PickMicroBatch(Simple(), 1099, 64, 0);
  ASSERT_FALSE(picked.ok());
  EXPECT_EQ(picked.status().code(), StatusCode::kResourceExhausted);

  MemoryEstimate big;
  big.fixed_bytes = 3 * kMiB;
  big.per_sample_bytes = 512 * 1024;
  picked = PickMicroBatch(big, 3 * kMiB, 64, 0);
  ASSERT_FALSE(picked.ok());
  const std::string& message = picked.status().message();
  EXPECT_NE(message.find("3.0 MiB fixed"), std::string::npos) << message;
  EXPECT_NE(message.find("512.0 KiB per sample"), std::string::npos) << message;
  EXPECT_NE(message.find("budget of 3.0 MiB"), std::string::npos) << message;
  EXPECT_NE(message.find("smaller model"), std::string::npos) << message;
  EXPECT_NE(message.find("--device-memory-limit"), std::string::npos) << message;

  // Fixed bytes alone over the budget: the same error, not an unsigned wrap-around.
  picked = PickMicroBatch(big, 2 * kMiB, 64, 0);
  ASSERT_FALSE(picked.ok());
  EXPECT_EQ(picked.status().code(), StatusCode::kResourceExhausted);
}

TEST(PickMicroBatchTest, RejectsAZeroMaximum) {
  auto picked = PickMicroBatch(Simple(), 0, 0, 0);
  ASSERT_FALSE(picked.ok());
  EXPECT_EQ(picked.status().code(), StatusCode::kInvalidArgument);
}

TEST(PickMicroBatchTest, AgreesWithEstimateForTheFp16Model) {
  const MemoryEstimate e = EstimateMemory(Shape(OptimizerKind::kAdamW, 2), kMiB);
  auto picked = PickMicroBatch(e, e.Total(100), 1024, 0);
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(*picked, 100u);
  picked = PickMicroBatch(e, e.Total(100) - 1, 1024, 0);
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(*picked, 99u);
}

}  // namespace
}  // namespace coupler::memory
