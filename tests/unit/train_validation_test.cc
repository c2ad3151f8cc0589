// Validation inside a real (in-process, 2-rank) run: the held-out test rows stay those of a run
// without validation; each epoch's last history line carries the validation scores; the best
// weights are kept apart (<checkpoint_dir>/best/) and named in the report; early stopping ends a
// run that stopped improving, on every rank at the same step, as a finished run; and a resume
// carries the best score, the epochs since it and the training time on.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/io/temp_dir.h"
#include "tests/unit/train_test_util.h"
#include "train/model/checkpoint.h"

namespace coupler::train {
namespace {

using testing::Lines;

using testing::RunGroup;
using testing::SmallConfig;

TEST(TrainValidationTest, ValidationRowsComeOutOfTrainingNotOutOfTheTestRows) {
  const Dataset all = testing::TeacherDataset(400, 8, 3, 11);
  const Split plain = SplitDataset(all, 0.25, 5);
  Split validated = SplitDataset(all, 0.25, 5);
  HoldOutValidation(validated, 0.2, 5);
  EXPECT_EQ(validated.test.x, plain.test.x);
  EXPECT_EQ(validated.test.y, plain.test.y);
  EXPECT_EQ(validated.validation.rows, 60u);  // 20% of the 300 training rows
  EXPECT_EQ(validated.train.rows + validated.validation.rows, plain.train.rows);
  // The same rows, reshuffled between the two parts: every training row is in exactly one.
  auto rows_of = [](const Dataset& d) {
    std::vector<std::vector<float>> rows;
    for (size_t r = 0; r < d.rows; ++r) {
      rows.emplace_back(d.x.begin() + r * d.features, d.x.begin() + (r + 1) * d.features);
    }
    return rows;
  };
  auto together = rows_of(validated.train);
  const auto held = rows_of(validated.validation);
  together.insert(together.end(), held.begin(), held.end());
  auto original = rows_of(plain.train);
  std::sort(together.begin(), together.end());
  std::sort(original.begin(), original.end());
  EXPECT_EQ(together, original);
}

TEST(TrainValidationTest, EachEpochIsScoredAndTheBestWeightsAreKept) {
  Split split = SplitDataset(testing::TeacherDataset(400, 8, 3, 99), 0.2, 5);
  HoldOutValidation(split, 0.2, 5);
  auto dir = io::TempDir::Create("coupler-validation");
  ASSERT_TRUE(dir.ok());
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.validation_fraction = 0.2;
  options.config.checkpoint_dir = dir->path() + "/ckpt";
  options.metrics_history = dir->path() + "/run.steps.jsonl";
  auto ran = RunGroup(2, options, split);
  ASSERT_TRUE(ran[0].ok()) << ran[0].status().ToString();
  ASSERT_TRUE(ran[1].ok()) << ran[1].status().ToString();
  const TrainReport& r = *ran[0];
  const int64_t per_epoch = r.total_steps / options.config.epochs;
  const auto lines = Lines(options.metrics_history);
  ASSERT_EQ(lines.size(), static_cast<size_t>(r.total_steps));
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool epoch_end = (static_cast<int64_t>(i) + 1) % per_epoch == 0;
    EXPECT_EQ(lines[i].find("\"val_loss\":") != std::string::npos, epoch_end) << lines[i];
    EXPECT_EQ(lines[i].find("\"val_accuracy\":") != std::string::npos, epoch_end) << lines[i];
  }
  EXPECT_GE(r.best_epoch, 1);
  EXPECT_LE(r.best_epoch, options.config.epochs);
  EXPECT_GT(r.best_val_accuracy, 0.5) << "the teacher problem is learnable";
  EXPECT_LE(r.best_val_loss, r.val_loss);
  EXPECT_FALSE(r.early_stopped);
  EXPECT_EQ(ran[1]->best_epoch, r.best_epoch) << "every rank saw the same scores";
  const std::string best = CheckpointPath(options.config.checkpoint_dir + "/best",
                                          r.best_epoch * per_epoch);
  EXPECT_EQ(r.best_checkpoint, best);
  auto state = ReadCheckpoint(best);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ(state->best_epoch, r.best_epoch);
  EXPECT_EQ(state->best_val_loss, r.best_val_loss);
  size_t best_files = 0;
  for (const auto& e : std::filesystem::directory_iterator(options.config.checkpoint_dir + "/best")) {
    best_files += e.path().extension() == ".bin" ? 1 : 0;
  }
  EXPECT_EQ(best_files, 1u) << "only the best is kept there";
}

// lr 1e-30 leaves every weight as it is (far below an ulp), so the validation loss never beats
// epoch 1's and patience 2 ends the run after epoch 3 — on every rank, as a finished run. A run
// interrupted after epoch 2 and resumed stops at the same step: the epochs since the best came
// back from its checkpoint, and so did its training time.
TEST(TrainValidationTest, EarlyStoppingEndsARunThatStoppedImprovingAndSurvivesAResume) {
  Split split = SplitDataset(testing::TeacherDataset(400, 8, 3, 99), 0.2, 5);
  HoldOutValidation(split, 0.2, 5);
  auto dir = io::TempDir::Create("coupler-early-stop");
  ASSERT_TRUE(dir.ok());
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.lr = 1e-30f;
  options.config.epochs = 10;
  options.config.validation_fraction = 0.2;
  options.config.early_stop_patience = 2;
  options.config.checkpoint_dir = dir->path() + "/straight";
  auto straight = RunGroup(2, options, split);
  ASSERT_TRUE(straight[0].ok()) << straight[0].status().ToString();
  const int64_t per_epoch = straight[0]->total_steps / options.config.epochs;
  for (const auto& r : straight) {
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->early_stopped);
    EXPECT_FALSE(r->stopped) << "an early stop is a finished run, not an interrupted one";
    EXPECT_EQ(r->completed_steps, 3 * per_epoch);
  }
  EXPECT_EQ(straight[0]->best_epoch, 1);
  EXPECT_TRUE(std::filesystem::exists(CheckpointPath(options.config.checkpoint_dir, 3 * per_epoch)))
      << "the final checkpoint at the step it stopped";

  TrainerOptions first = options;
  first.config.checkpoint_dir = dir->path() + "/resumed";
  first.config.checkpoint_every = per_epoch;
  first.stop_after_steps = 2 * per_epoch + 1;  // the last checkpoint: after epoch 2
  ASSERT_TRUE(RunGroup(2, first, split)[0].ok());
  TrainerOptions rest = first;
  rest.stop_after_steps = -1;
  rest.resume = true;
  auto resumed = RunGroup(2, rest, split);
  ASSERT_TRUE(resumed[0].ok()) << resumed[0].status().ToString();
  EXPECT_TRUE(resumed[0]->early_stopped);
  EXPECT_EQ(resumed[0]->completed_steps, 3 * per_epoch);
  EXPECT_EQ(resumed[0]->best_epoch, 1);
  // The run-wide time holds the first attempt's training too.
  const double this_attempt = static_cast<double>(resumed[0]->steps) *
                              static_cast<double>(options.config.global_batch) /
                              resumed[0]->samples_per_s;
  EXPECT_GT(resumed[0]->run_seconds, this_attempt);
}

}  // namespace
}  // namespace coupler::train
