// The learning-rate schedule and gradient clipping inside a real (in-process, 2-rank) training
// run: the history records the rate each step took, which is the schedule's; clipping records
// the pre-clip norm and changes the weights (an SGD step with clipped gradients moves them less);
// a resumed run takes the same rates and ends bit-identical to the run never interrupted.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/io/temp_dir.h"
#include "tests/unit/train_test_util.h"
#include "train/config/lr_schedule.h"

namespace coupler::train {
namespace {

using testing::Lines;

using testing::RunGroup;
using testing::SmallConfig;

// The number after "\"key\":" in a history line; NaN when the line has none.
double Field(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return std::nan("");
  return std::stod(line.substr(at + key.size() + 3));
}

TEST(TrainScheduleTest, EachStepTakesTheSchedulesRateAndAResumeTakesTheSame) {
  const Split split = SplitDataset(testing::TeacherDataset(320, 8, 3, 99), 0.25, 5);
  auto dir = io::TempDir::Create("coupler-schedule");
  ASSERT_TRUE(dir.ok());
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.schedule.shape = LrShape::kCosine;
  options.config.schedule.warmup_steps = 3;
  options.config.schedule.min_ratio = 0.1;
  options.config.checkpoint_dir = dir->path() + "/straight";
  options.metrics_history = dir->path() + "/straight.steps.jsonl";
  auto straight = RunGroup(2, options, split);
  ASSERT_TRUE(straight[0].ok()) << straight[0].status().ToString();
  const int64_t total = straight[0]->total_steps;
  const auto lines = Lines(options.metrics_history);
  ASSERT_EQ(lines.size(), static_cast<size_t>(total));
  const int64_t per_epoch = total / options.config.epochs;
  for (int64_t s = 0; s < total; ++s) {
    const double expected = static_cast<float>(
        LearningRateAt(options.config.schedule, options.config.lr, s, total, per_epoch));
    EXPECT_DOUBLE_EQ(Field(lines[s], "lr"), expected) << lines[s];
    EXPECT_GT(Field(lines[s], "time"), 1.7e9) << lines[s];
    EXPECT_TRUE(std::isnan(Field(lines[s], "grad_norm"))) << "no clipping, no norm: " << lines[s];
  }
  EXPECT_LT(Field(lines[0], "lr"), Field(lines[3], "lr")) << "warmup";
  EXPECT_LT(Field(lines.back(), "lr"), Field(lines[3], "lr")) << "cosine decay";

  // Stopped after 5 steps and resumed: the same rates, the same weights, bit for bit.
  TrainerOptions first = options;
  first.config.checkpoint_dir = dir->path() + "/run";
  first.config.checkpoint_every = 5;
  first.stop_after_steps = 7;
  first.metrics_history = dir->path() + "/run.steps.jsonl";
  ASSERT_TRUE(RunGroup(2, first, split)[0].ok());
  TrainerOptions rest = first;
  rest.stop_after_steps = -1;
  rest.resume = true;
  auto resumed = RunGroup(2, rest, split);
  ASSERT_TRUE(resumed[0].ok()) << resumed[0].status().ToString();
  EXPECT_EQ(resumed[0]->weights, straight[0]->weights);
  const auto again = Lines(first.metrics_history);
  ASSERT_EQ(again.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(Field(again[i], "lr"), Field(lines[i], "lr"));
}

TEST(TrainScheduleTest, ClippingBoundsTheGradientNormAndRecordsIt) {
  const Split split = SplitDataset(testing::TeacherDataset(320, 8, 3, 99), 0.25, 5);
  auto dir = io::TempDir::Create("coupler-clip");
  ASSERT_TRUE(dir.ok());
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.optimizer = Optimizer::kSgd;  // the step is lr x gradient: clipping shows
  options.config.momentum = 0;
  options.config.weight_decay = 0;
  options.config.epochs = 1;
  options.metrics_history = dir->path() + "/free.steps.jsonl";
  auto free = RunGroup(2, options, split);
  ASSERT_TRUE(free[0].ok()) << free[0].status().ToString();

  TrainerOptions clipped = options;
  clipped.config.clip_grad_norm = 1e-3;  // far below the norms of this problem
  clipped.metrics_history = dir->path() + "/clipped.steps.jsonl";
  auto ran = RunGroup(2, clipped, split);
  ASSERT_TRUE(ran[0].ok()) << ran[0].status().ToString();
  EXPECT_EQ(ran[1].ok(), true);
  EXPECT_EQ(ran[0]->weights, ran[1]->weights) << "every rank clipped alike";
  EXPECT_NE(ran[0]->weights, free[0]->weights);
  const auto lines = Lines(clipped.metrics_history);
  ASSERT_FALSE(lines.empty());
  for (const std::string& line : lines) EXPECT_GT(Field(line, "grad_norm"), 1e-3) << line;

  // With every step's gradient scaled to norm 1e-3, SGD moves the weights by at most
  // lr x 1e-3 per step: the total distance is bounded by steps x lr x 1e-3.
  auto initial = options;
  initial.stop_after_steps = 0;
  auto start = RunGroup(2, initial, split);
  ASSERT_TRUE(start[0].ok()) << start[0].status().ToString();
  double moved = 0;
  for (size_t i = 0; i < start[0]->weights.size(); ++i) {
    const double d = static_cast<double>(ran[0]->weights[i]) - start[0]->weights[i];
    moved += d * d;
  }
  const double bound = static_cast<double>(lines.size()) * options.config.lr * 1e-3 * 1.0001;
  EXPECT_LE(std::sqrt(moved), bound);
}

}  // namespace
}  // namespace coupler::train
