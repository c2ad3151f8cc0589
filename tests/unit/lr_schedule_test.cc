// The learning-rate schedules step by step against their formulas (train/config/lr_schedule.h),
// which are PyTorch's LinearLR warmup then StepLR or CosineAnnealingLR; and how a config names
// them.
#include "train/config/lr_schedule.h"

#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "train/config/train_config.h"

namespace coupler::train {
namespace {

constexpr double kLr = 0.01;

TEST(LrScheduleTest, ConstantIsTheLrAtEveryStep) {
  const LrSchedule s;
  for (int64_t step : {0, 1, 99, 1000}) EXPECT_EQ(LearningRateAt(s, kLr, step, 100, 10), kLr);
}

TEST(LrScheduleTest, WarmupRisesLinearlyToTheLrThenHolds) {
  LrSchedule s;
  s.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 0, 100, 10), kLr / 4);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 1, 100, 10), kLr * 2 / 4);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 3, 100, 10), kLr);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 4, 100, 10), kLr);
}

TEST(LrScheduleTest, StepDecaysByGammaEveryNStepsAfterTheWarmup) {
  LrSchedule s;
  s.shape = LrShape::kStep;
  s.step_every = 10;
  s.step_gamma = 0.5;
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 9, 100, 7), kLr);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 10, 100, 7), kLr / 2);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 25, 100, 7), kLr / 4);
  s.warmup_steps = 5;  // the decays count from the end of the warmup
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 14, 100, 7), kLr);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 15, 100, 7), kLr / 2);
  s.warmup_steps = 0;
  s.step_every = 0;  // one epoch's steps
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 6, 100, 7), kLr);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 7, 100, 7), kLr / 2);
}

TEST(LrScheduleTest, CosineFallsFromTheLrToItsFloorOverTheStepsAfterTheWarmup) {
  LrSchedule s;
  s.shape = LrShape::kCosine;
  s.warmup_steps = 10;
  s.min_ratio = 0.1;
  const int64_t total = 110;
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 9, total, 10), kLr);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 10, total, 10), kLr);
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 60, total, 10), kLr * (0.1 + 0.9 * 0.5));
  const double t = 25.0 / 100.0;
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, 35, total, 10),
                   kLr * (0.1 + 0.9 * (1 + std::cos(std::numbers::pi * t)) / 2));
  EXPECT_DOUBLE_EQ(LearningRateAt(s, kLr, total, total, 10), kLr * 0.1);
}

TEST(LrScheduleTest, AConfigNamesItsScheduleAndClipping) {
  const std::string minimal = "data: d.csv\nlayers: [4, 2]\n";
  auto config = ParseTrainConfig(minimal + "lr_schedule: cosine\nwarmup_steps: 50\nlr_min_ratio: 0.05\n"
                                           "clip_grad_norm: 1.0\n",
                                 "train.yaml", "/cfg", {});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->schedule.shape, LrShape::kCosine);
  EXPECT_EQ(config->schedule.warmup_steps, 50);
  EXPECT_EQ(config->schedule.min_ratio, 0.05);
  EXPECT_EQ(config->clip_grad_norm, 1.0);
  auto bad = ParseTrainConfig(minimal + "lr_schedule: linear\n", "train.yaml", "/cfg", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("constant, step or cosine"), std::string::npos)
      << bad.status().ToString();
  EXPECT_EQ(ScheduleIdentity(LrSchedule{}), "");
  EXPECT_EQ(ScheduleIdentity(config->schedule), "lr_schedule=cosine; warmup_steps=50; lr_min_ratio=0.05");
}

}  // namespace
}  // namespace coupler::train
