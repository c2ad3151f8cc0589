// Dynamic loss scaling: the scale grows after exactly growth_interval clean steps, an overflow
// halves it and restarts the count, it stops at max_scale, an overflow at min_scale is an error
// that says what to do, and Restore brings back the exact state for resumed runs.
#include "train/loss_scaler.h"

#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace coupler::precision {
namespace {

// Runs n updates with finite gradients, each of which must be applied.
void CleanSteps(LossScaler& scaler, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    auto applied = scaler.Update(true);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
    ASSERT_TRUE(*applied) << "clean step " << i << " skipped";
  }
}

void Overflow(LossScaler& scaler) {
  auto applied = scaler.Update(false);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_FALSE(*applied) << "an overflowing step must be skipped";
}

TEST(LossScalerTest, StartsAtTwoToTheSixteen) {
  LossScaler scaler(true);
  EXPECT_TRUE(scaler.enabled());
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.inv_scale(), 1.0f / 65536.0f);
  EXPECT_EQ(scaler.clean_steps(), 0);
}

TEST(LossScalerTest, GrowsAfterExactly2000CleanSteps) {
  LossScaler scaler(true);
  CleanSteps(scaler, 1999);
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.clean_steps(), 1999);
  CleanSteps(scaler, 1);
  EXPECT_EQ(scaler.scale(), 131072.0f);
  EXPECT_EQ(scaler.clean_steps(), 0);  // the next growth needs another full run
  CleanSteps(scaler, 1999);
  EXPECT_EQ(scaler.scale(), 131072.0f);
  CleanSteps(scaler, 1);
  EXPECT_EQ(scaler.scale(), 262144.0f);
}

TEST(LossScalerTest, OverflowHalvesTheScaleAndRestartsTheCount) {
  LossScaler scaler(true);
  CleanSteps(scaler, 1500);
  Overflow(scaler);
  EXPECT_EQ(scaler.scale(), 32768.0f);
  EXPECT_EQ(scaler.clean_steps(), 0);
  // Had the count not restarted, 500 more clean steps would grow the scale.
  CleanSteps(scaler, 1999);
  EXPECT_EQ(scaler.scale(), 32768.0f);
  CleanSteps(scaler, 1);
  EXPECT_EQ(scaler.scale(), 65536.0f);
}

TEST(LossScalerTest, OverflowAtTheMinimumIsAnErrorThatSaysWhatToDo) {
  LossScalerOptions options;
  options.initial_scale = 4.0f;
  LossScaler scaler(true, options);
  Overflow(scaler);
  EXPECT_EQ(scaler.scale(), 2.0f);
  Overflow(scaler);
  EXPECT_EQ(scaler.scale(), 1.0f);
  CleanSteps(scaler, 10);

  auto applied = scaler.Update(false);
  ASSERT_FALSE(applied.ok());
  EXPECT_EQ(applied.status().code(), StatusCode::kAborted);
  const std::string& message = applied.status().message();
  EXPECT_EQ(message.rfind("fp16 loss scale fell to its minimum (1) and gradients still overflow",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("bf16"), std::string::npos) << message;
  EXPECT_NE(message.find("learning rate"), std::string::npos) << message;
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.clean_steps(), 10);  // a failed update leaves the state alone
}

TEST(LossScalerTest, BackoffNeverGoesBelowTheMinimum) {
  LossScalerOptions options;
  options.initial_scale = 1.5f;
  LossScaler scaler(true, options);
  Overflow(scaler);
  EXPECT_EQ(scaler.scale(), 1.0f);  // 0.75 clamped to min_scale
  EXPECT_FALSE(scaler.Update(false).ok());
}

TEST(LossScalerTest, GrowthStopsAtTheMaximum) {
  LossScalerOptions options;
  options.initial_scale = 8388608.0f;  // 2^23
  options.growth_interval = 3;
  LossScaler scaler(true, options);
  CleanSteps(scaler, 3);
  EXPECT_EQ(scaler.scale(), 16777216.0f);
  CleanSteps(scaler, 3);
  EXPECT_EQ(scaler.scale(), 16777216.0f);
  EXPECT_EQ(scaler.clean_steps(), 0);

  options.max_scale = 3000000.0f;  // not a power of two: capped exactly, not overshot
  options.initial_scale = 2000000.0f;
  LossScaler capped(true, options);
  CleanSteps(capped, 3);
  EXPECT_EQ(capped.scale(), 3000000.0f);
}

TEST(LossScalerTest, DisabledScalerStaysAtOneAndSkipsNonFiniteSteps) {
  LossScaler scaler(false);
  EXPECT_FALSE(scaler.enabled());
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.inv_scale(), 1.0f);
  CleanSteps(scaler, 5000);
  EXPECT_EQ(scaler.scale(), 1.0f);

  auto applied = scaler.Update(false);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();  // no minimum to fall below
  EXPECT_FALSE(*applied);
  EXPECT_EQ(scaler.scale(), 1.0f);
  applied = scaler.Update(false);
  ASSERT_TRUE(applied.ok());
  EXPECT_FALSE(*applied);
}

TEST(LossScalerTest, RestoreResumesTheExactState) {
  LossScaler scaler(true);
  scaler.Restore(1024.0f, 1999);
  EXPECT_EQ(scaler.scale(), 1024.0f);
  EXPECT_EQ(scaler.clean_steps(), 1999);
  CleanSteps(scaler, 1);
  EXPECT_EQ(scaler.scale(), 2048.0f);
  EXPECT_EQ(scaler.clean_steps(), 0);

  // A resumed scaler and one that never stopped agree step for step.
  LossScaler original(true);
  CleanSteps(original, 700);
  Overflow(original);
  CleanSteps(original, 300);
  LossScaler resumed(true);
  resumed.Restore(original.scale(), original.clean_steps());
  for (int i = 0; i < 4000; ++i) {
    const bool finite = i % 1777 != 5;
    auto a = original.Update(finite);
    auto b = resumed.Update(finite);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(*a, *b) << "step " << i;
    ASSERT_EQ(original.scale(), resumed.scale()) << "step " << i;
    ASSERT_EQ(original.clean_steps(), resumed.clean_steps()) << "step " << i;
  }
}

TEST(LossScalerTest, RestoreClampsStateFromOtherOptionsOrCorruptCheckpoints) {
  LossScaler scaler(true);
  scaler.Restore(1e30f, -3);
  EXPECT_EQ(scaler.scale(), 16777216.0f);
  EXPECT_EQ(scaler.clean_steps(), 0);
  scaler.Restore(0.25f, 5000);
  EXPECT_EQ(scaler.scale(), 1.0f);
  EXPECT_EQ(scaler.clean_steps(), 1999);
  scaler.Restore(std::numeric_limits<float>::quiet_NaN(), 7);
  EXPECT_EQ(scaler.scale(), 65536.0f);
  EXPECT_EQ(scaler.clean_steps(), 7);

  LossScaler disabled(false);
  disabled.Restore(4096.0f, 12);
  EXPECT_EQ(disabled.scale(), 1.0f);
  EXPECT_EQ(disabled.clean_steps(), 0);
}

}  // namespace
}  // namespace coupler::precision
