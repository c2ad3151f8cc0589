// Resuming as researchers do: on another rank count with the same math (the accumulation takes
// up the change), after a stop asked for at a step boundary (bit-identical), with the per-step
// history continuing; and the pure decisions behind it (the resume split, the notices, the
// history's lines).
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <limits>

#include "runtime/io/temp_dir.h"
#include "tests/unit/train_test_util.h"
#include "train/memory/micro_batch_plan.h"
#include "train/metrics_history.h"
#include "train/model/checkpoint.h"
#include "train/resume_plan.h"
#include "train/stop_signal.h"

namespace coupler::train {
namespace {

using testing::Lines;

using testing::RelativeDifference;
using testing::RunGroup;
using testing::SmallConfig;

TrainConfig Digits() {
  TrainConfig c;
  c.layers = {64, 128, 10};
  c.global_batch = 64;
  c.micro_batch = 16;
  c.accumulate = 2;
  return c;
}

TEST(ResumePlanTest, AnotherRankCountKeepsTheMicroBatchAndScalesTheAccumulation) {
  const TrainConfig c = Digits();
  auto plan = PlanResumeSplit(c, 1, Fingerprint(c, 2), 16, 2, 0, 0);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->micro_batch, 16u);
  EXPECT_EQ(plan->accumulate, 4u);
  EXPECT_EQ(plan->checkpoint_ranks, 2);
  EXPECT_EQ(plan->notice,
            "--resume on 1 ranks from a checkpoint of 2 ranks (micro_batch 16 x accumulate 2): "
            "micro_batch 16 x accumulate 4 keeps global_batch 64");
  // More ranks than the micro-batch leaves room for: the micro-batch shrinks to the share.
  plan = PlanResumeSplit(c, 8, Fingerprint(c, 2), 16, 2, 8, 1);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->micro_batch, 8u);
  EXPECT_EQ(plan->accumulate, 1u);
  // A micro-batch that does not divide the new share: the largest one below it that does.
  TrainConfig c96 = c;
  c96.global_batch = 96;
  plan = PlanResumeSplit(c96, 3, Fingerprint(c96, 2), 48, 1, 32, 1);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->micro_batch, 32u);
  EXPECT_EQ(plan->accumulate, 1u);
}

// A checkpoint belongs to the run whose settings wrote it: another lr or seed is another run
// (named, setting by setting), another rank count, epochs or data folder is the same run, and a
// checkpoint written before runs were recorded matches on its model alone.
TEST(ResumePlanTest, ARunIsItsModelAndItsSettingsNotItsRanksOrEpochs) {
  const TrainConfig c = Digits();
  TrainConfig other = c;
  other.lr = 0.01f;
  other.seed = 7;
  EXPECT_TRUE(SameRun(c, Fingerprint(c, 2), RunIdentity(c)));
  TrainConfig longer = c;
  longer.epochs = 40;
  longer.data = "/elsewhere/digits.csv";
  EXPECT_TRUE(SameRun(longer, Fingerprint(c, 4), RunIdentity(c)));
  EXPECT_FALSE(SameRun(other, Fingerprint(c, 2), RunIdentity(c)));
  EXPECT_TRUE(SameRun(other, Fingerprint(c, 2), "")) << "an old checkpoint names no run";
  TrainConfig wider = c;
  wider.layers = {64, 256, 10};
  EXPECT_FALSE(SameRun(wider, Fingerprint(c, 2), ""));
  EXPECT_EQ(IdentityDifferences(RunIdentity(c), RunIdentity(other)),
            "lr 0.001 in the checkpoint, 0.01 here; seed 0 in the checkpoint, 7 here");
  EXPECT_EQ(IdentityDifferences(RunIdentity(c), RunIdentity(longer)), "");
  TrainConfig spaced = c;
  spaced.label_column = "digit; class";
  EXPECT_EQ(IdentityDifferences(RunIdentity(c), RunIdentity(spaced)),
            "label_column label in the checkpoint, digit; class here");
  // A schedule or clipping makes another run; without them the identity is what checkpoints
  // written before they existed hold, so those still resume.
  EXPECT_EQ(RunIdentity(c).find("lr_schedule"), std::string::npos);
  TrainConfig scheduled = c;
  scheduled.schedule.shape = LrShape::kCosine;
  scheduled.schedule.warmup_steps = 10;
  scheduled.clip_grad_norm = 1.5;
  EXPECT_FALSE(SameRun(scheduled, Fingerprint(c, 2), RunIdentity(c)));
  EXPECT_EQ(IdentityDifferences(RunIdentity(c), RunIdentity(scheduled)),
            "lr_schedule not set in the checkpoint, cosine here; warmup_steps not set in the "
            "checkpoint, 10 here; lr_min_ratio not set in the checkpoint, 0 here; clip_grad_norm "
            "not set in the checkpoint, 1.5 here");
}

// The run's settings (format 2) and its progress (format 3: training time, best validation
// score) travel in the checkpoint; files of formats 1 and 2 still read, naming no run and
// starting the progress afresh.
TEST(CheckpointTest, TheRunAndItsProgressAreStoredAndOlderFormatsStillRead) {
  auto dir = io::TempDir::Create("coupler-ckpt");
  ASSERT_TRUE(dir.ok());
  CheckpointState s;
  s.step = 7;
  s.micro_batch = 16;
  s.accumulate = 2;
  s.fingerprint = Fingerprint(Digits(), 1);
  s.run = RunIdentity(Digits());
  s.train_seconds = 12.5;
  s.best_val_loss = 0.25;
  s.best_val_accuracy = 0.875;
  s.best_epoch = 3;
  s.epochs_since_best = 1;
  s.params = {1.0f, 2.0f};
  ASSERT_TRUE(WriteCheckpoint(dir->path(), s).ok());
  auto back = ReadCheckpoint(CheckpointPath(dir->path(), 7));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->run, s.run);
  EXPECT_EQ(back->train_seconds, 12.5);
  EXPECT_EQ(back->best_val_loss, 0.25);
  EXPECT_EQ(back->best_val_accuracy, 0.875);
  EXPECT_EQ(back->best_epoch, 3);
  EXPECT_EQ(back->epochs_since_best, 1);
  EXPECT_EQ(back->params, s.params);
  EXPECT_TRUE(HasCheckpoints(dir->path()));
  const std::string v3 = [&] {
    std::ifstream in(CheckpointPath(dir->path(), 7), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  // An older release's file: this payload without what it did not write, under its version.
  auto older = [&](uint32_t version, bool keep_run) {
    const size_t header = 8 + 4 + 8 + 8;
    std::string payload = v3.substr(header);
    // step, seed, micro_batch, accumulate; loss_scale; clean_steps, optimizer_steps; fingerprint.
    const size_t run_at = 8 * 4 + 4 + 8 * 2 + 8 + s.fingerprint.size();
    const size_t progress = 8 * 5;
    payload.erase(keep_run ? run_at + 8 + s.run.size() : run_at,
                  (keep_run ? 0 : 8 + s.run.size()) + progress);
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned char b : payload) h = (h ^ b) * 0x100000001b3ull;
    std::string head = v3.substr(0, 8);
    const uint64_t size = payload.size();
    head.append(reinterpret_cast<const char*>(&version), 4);
    head.append(reinterpret_cast<const char*>(&size), 8);
    head.append(reinterpret_cast<const char*>(&h), 8);
    const std::string path = dir->File("v" + std::to_string(version) + ".bin");
    std::ofstream(path, std::ios::binary) << head << payload;
    return ReadCheckpoint(path);
  };
  auto v2 = older(2, true);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(v2->run, s.run);
  EXPECT_EQ(v2->best_epoch, 0);
  EXPECT_EQ(v2->train_seconds, 0.0);
  EXPECT_EQ(v2->params, s.params);
  auto v1 = older(1, false);
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  EXPECT_EQ(v1->run, "");
  EXPECT_EQ(v1->fingerprint, s.fingerprint);
  EXPECT_EQ(v1->params, s.params);
}

TEST(ResumePlanTest, SameRankCountKeepsTheCheckpointsSplitAndSaysSo) {
  const TrainConfig c = Digits();
  auto plan = PlanResumeSplit(c, 2, Fingerprint(c, 2), 16, 2, 16, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->notice, "");  // nothing changed, nothing said
  plan = PlanResumeSplit(c, 2, Fingerprint(c, 2), 8, 4, 16, 2);  // backed off before
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->micro_batch, 8u);
  EXPECT_EQ(plan->accumulate, 4u);
  EXPECT_EQ(plan->notice, "--resume keeps the checkpoint's micro_batch 8 x accumulate 4 (the "
                          "config says micro_batch 16 x accumulate 2)");
}

TEST(ResumePlanTest, RefusesWhatChangesTheMath) {
  const TrainConfig c = Digits();
  auto plan = PlanResumeSplit(c, 3, Fingerprint(c, 2), 16, 2, 0, 0);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("cannot be split over 3 ranks; resume on 1, 2, 4, 8, "
                                         "16, 32 or 64 ranks"),
            std::string::npos)
      << plan.status().ToString();
  TrainConfig other = c;
  other.global_batch = 128;
  plan = PlanResumeSplit(other, 2, Fingerprint(c, 2), 16, 2, 16, 4);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("global_batch=64 ranks=2'"), std::string::npos)
      << plan.status().ToString();
  plan = PlanResumeSplit(c, 2, "layers=64,128,10 optimizer=adamw", 16, 2, 16, 2);
  EXPECT_FALSE(plan.ok());
}

TEST(ResumePlanTest, FingerprintNamesItsRanks) {
  const TrainConfig c = Digits();
  EXPECT_EQ(Fingerprint(c, 2),
            "layers=64,128,10 optimizer=adamw precision=fp32 global_batch=64 ranks=2");
  EXPECT_EQ(FingerprintRanks(Fingerprint(c, 12)), 12);
  EXPECT_EQ(FingerprintRanks("layers=1 ranks=x"), std::nullopt);
  EXPECT_EQ(FingerprintRanks("layers=1"), std::nullopt);
}

TEST(ResumePlanTest, AutoMicroBatchSaysWhenItChangesAccumulate) {
  TrainConfig c = Digits();
  c.micro_batch = 0;
  c.accumulate = 2;
  auto choice = ChooseMicroBatch(c, 2, 0);  // unlimited: the whole share in one micro-batch
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->accumulate, 1u);
  EXPECT_EQ(choice->notice, "micro_batch auto changed accumulate 2 -> 1 (micro_batch 32 x "
                            "accumulate 1 x 2 ranks = global_batch 64)");
  c.accumulate = 1;
  choice = ChooseMicroBatch(c, 2, 0);
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->notice, "");
}

TEST(MetricsHistoryTest, LinesAreJsonWithNullForNonFinite) {
  StepRecord r;
  r.step = 3;
  r.epoch = 1;
  r.loss = 0.5;
  r.loss_scale = 65536;
  r.lr = 0.00025;
  r.samples_per_s = 1234.56;
  r.skipped_steps = 1;
  r.time = 1796616000.1234;
  EXPECT_EQ(FormatStepLine(r), "{\"step\":3,\"epoch\":1,\"loss\":0.5,\"loss_scale\":65536,"
                               "\"lr\":0.00025,\"samples_per_s\":1234.6,\"skipped_steps\":1,"
                               "\"time\":1796616000.123}\n");
  r.grad_norm = 3.5;  // computed when clipping
  EXPECT_NE(FormatStepLine(r).find("\"lr\":0.00025,\"grad_norm\":3.5,\"samples_per_s\""),
            std::string::npos);
  r.loss = std::numeric_limits<double>::infinity();
  EXPECT_NE(FormatStepLine(r).find("\"loss\":null,"), std::string::npos);
}

TEST(MetricsHistoryTest, KeepsStepsUpToTheCheckpointAndDropsATornLine) {
  std::string text;
  for (int s = 1; s <= 5; ++s) {
    StepRecord r;
    r.step = s;
    text += FormatStepLine(r);
  }
  text += "{\"step\":6,\"epo";  // torn by a crash mid-write
  const std::string kept = KeepStepsUpTo(text, 3);
  EXPECT_EQ(std::count(kept.begin(), kept.end(), '\n'), 3);
  EXPECT_NE(kept.find("{\"step\":3,"), std::string::npos);
  EXPECT_EQ(kept.find("{\"step\":4,"), std::string::npos);
  EXPECT_EQ(KeepStepsUpTo("garbage\n{\"step\":x,}\n", 10), "");
  EXPECT_EQ(HistoryPathFor("/out/metrics.json"), "/out/metrics.steps.jsonl");
  EXPECT_EQ(HistoryPathFor("/out/metrics"), "/out/metrics.steps.jsonl");
}

TEST(StopSignalsTest, ASignalRaisesTheFlagInsteadOfEndingTheProcess) {
  StopSignals stop;
  EXPECT_FALSE(stop.requested().load());
  EXPECT_EQ(stop.signal_number(), 0);
  ASSERT_EQ(::raise(SIGUSR1), 0);  // its default action would end this test binary
  EXPECT_TRUE(stop.requested().load());
  EXPECT_EQ(stop.signal_number(), SIGUSR1);
  // The first signal gave the next one its default action back.
  struct sigaction now {};
  ASSERT_EQ(::sigaction(SIGINT, nullptr, &now), 0);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(TrainerResumeTest, OneRankFromATwoRankCheckpointMatchesTheTwoRankRun) {
  const Split split = SplitDataset(testing::TeacherDataset(320, 8, 3, 99), 0.25, 5);
  auto dir = io::TempDir::Create("coupler-ckpt");
  ASSERT_TRUE(dir.ok());
  TrainerOptions two;
  two.config = SmallConfig();  // 8 x 2 x 2 ranks
  two.config.checkpoint_dir = dir->path();
  two.config.checkpoint_every = 5;
  auto straight = RunGroup(2, two, split);
  ASSERT_TRUE(straight[0].ok()) << straight[0].status().ToString();

  std::filesystem::remove_all(dir->path());
  TrainerOptions interrupted = two;
  interrupted.stop_after_steps = 12;  // last checkpoint at step 10
  ASSERT_TRUE(RunGroup(2, interrupted, split)[0].ok());
  TrainerOptions one = two;  // the config still says accumulate 2, which 1 rank cannot use
  one.resume = true;
  auto rest = RunGroup(1, one, split);
  ASSERT_TRUE(rest[0].ok()) << rest[0].status().ToString();
  EXPECT_EQ(rest[0]->accumulate, 4u);
  EXPECT_EQ(rest[0]->micro_batch, 8u);
  EXPECT_EQ(rest[0]->steps, straight[0]->steps - 10);
  EXPECT_LT(RelativeDifference(rest[0]->weights, straight[0]->weights), 1e-6);
  EXPECT_GT(RelativeDifference(rest[0]->weights, straight[0]->weights), 0.0)
      << "sums in another order should differ in the last bits; identical weights suggest the "
         "resume did not run on one rank";

  // Three ranks cannot hold global_batch 32: refused, not rounded.
  TrainerOptions three = one;
  auto refused = RunGroup(3, three, split);
  ASSERT_FALSE(refused[0].ok());
  EXPECT_NE(refused[0].status().message().find("resume on 1, 2, 4, 8, 16 or 32 ranks"),
            std::string::npos)
      << refused[0].status().ToString();
}

TEST(TrainerResumeTest, StopRequestEndsAtAStepBoundaryAndResumesBitIdentical) {
  const Split split = SplitDataset(testing::TeacherDataset(320, 8, 3, 99), 0.25, 5);
  auto dir = io::TempDir::Create("coupler-ckpt");
  ASSERT_TRUE(dir.ok());
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.precision = ElementType::kFloat16;
  // The straight run ends on a checkpoint of its own (a finished run's last): kept apart.
  options.config.checkpoint_dir = dir->path() + "/straight-ckpt";
  options.config.checkpoint_every = 0;  // only the stop (and the end) writes one
  options.metrics_history = dir->path() + "/straight.steps.jsonl";
  auto straight = RunGroup(2, options, split);
  ASSERT_TRUE(straight[0].ok()) << straight[0].status().ToString();
  ASSERT_FALSE(straight[0]->stopped);
  const int64_t total = straight[0]->total_steps;
  EXPECT_EQ(Lines(options.metrics_history).size(), static_cast<size_t>(total));

  // Raised before the first step: every rank stops after step 1, rank 0 checkpoints.
  std::atomic<bool> stop{true};
  EXPECT_EQ(straight[0]->checkpoint, CheckpointPath(options.config.checkpoint_dir, total));
  EXPECT_TRUE(std::filesystem::exists(straight[0]->checkpoint)) << "a finished run's last checkpoint";
  options.config.checkpoint_dir = dir->path() + "/ckpt";
  TrainerOptions first = options;
  first.stop_requested = &stop;
  first.metrics_history = dir->path() + "/run.steps.jsonl";
  auto stopped = RunGroup(2, first, split);
  for (auto& r : stopped) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->stopped);
    EXPECT_EQ(r->completed_steps, 1);
  }
  EXPECT_EQ(stopped[0]->checkpoint, CheckpointPath(options.config.checkpoint_dir, 1));
  EXPECT_TRUE(std::filesystem::exists(stopped[0]->checkpoint));
  EXPECT_EQ(Lines(first.metrics_history).size(), 1u);

  TrainerOptions resumed = first;
  resumed.stop_requested = nullptr;
  resumed.resume = true;
  auto rest = RunGroup(2, resumed, split);
  ASSERT_TRUE(rest[0].ok()) << rest[0].status().ToString();
  EXPECT_EQ(rest[0]->weights, straight[0]->weights);  // bit for bit
  // The history continues: one line per step, the same steps as the straight run's.
  const auto a = Lines(options.metrics_history);
  const auto b = Lines(first.metrics_history);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].substr(0, b[i].find(",\"samples_per_s\"")),
              a[i].substr(0, a[i].find(",\"samples_per_s\"")));
  }
}

}  // namespace
}  // namespace coupler::train
