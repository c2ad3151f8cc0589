// `coupler train` stopped and resumed the way researchers work: a 2-rank checkpoint continued on
// 1 rank (the accumulation doubles, the math stays), Ctrl-C on mpirun and a scheduler's SIGTERM
// to one rank (the group stops at one step boundary with a checkpoint, says how to resume, and
// the resumed run ends bit-identical), the per-step history surviving the resume, and two runs
// sharing a checkpoint_dir never resuming each other.
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/mpi/train_harness.h"

namespace coupler::train_test {
namespace {

std::vector<std::string> Join(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<std::string> Lines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool HasCheckpoint(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".bin") return true;
  }
  return false;
}

// Two runs in one checkpoint_dir never resume each other. Run B (another lr) started where run
// A's checkpoints are neither prunes them nor is pruned in their favour: it keeps its own in a
// run-* folder beside them and says so; --resume continues each run from its own checkpoints,
// chosen by its settings; a resume whose settings match no checkpoint is refused, naming what
// differs. (Before, B's checkpoints were pruned because A's had higher steps, and B's --resume
// finished run A.)
TEST(TrainResumeTest, RunsSharingACheckpointDirNeverResumeEachOther) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const fs::path ckpt = dir / "ckpt";
  auto files = [](const fs::path& folder) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
      if (e.is_regular_file()) names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  // 22 steps an epoch: run A (the config's lr, 0.003) checkpoints at 10..60 and at its end, 66,
  // and keeps 50, 60, 66.
  const std::vector<std::string> a = {"--set", "epochs=3", "--set", "checkpoint_every=10",
                                      "--set", "accumulate=4"};
  const CommandResult first = Train(1, dir, a);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::vector<std::string> a_files = files(ckpt);
  ASSERT_EQ(a_files, (std::vector<std::string>{"ckpt-0000000050.bin", "ckpt-0000000060.bin",
                                                "ckpt-0000000066.bin"}));

  const std::vector<std::string> b = Join(a, {"--set", "lr=0.001"});
  const CommandResult second = Train(1, dir, Join(b, {"--stop-after-steps", "25"}));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find(ckpt.string() + " holds another run's checkpoints"), std::string::npos)
      << second.err;
  EXPECT_EQ(files(ckpt), a_files) << "run A's checkpoints were touched";
  fs::path b_folder;
  for (const auto& e : fs::directory_iterator(ckpt)) {
    if (e.is_directory()) b_folder = e.path();
  }
  ASSERT_FALSE(b_folder.empty()) << "run B kept no folder of its own";
  EXPECT_EQ(files(b_folder), (std::vector<std::string>{"ckpt-0000000010.bin", "ckpt-0000000020.bin"}));

  // B resumed is B: from its step 20, in its folder.
  const CommandResult b_again = Train(1, dir, Join(b, {"--resume"}));
  ASSERT_EQ(b_again.exit_code, 0) << b_again.err;
  EXPECT_NE(b_again.err.find("resumed from " + (b_folder / "ckpt-0000000020.bin").string()),
            std::string::npos)
      << b_again.err;
  // A resumed is A, although B's checkpoints are newer: from its final step, 66.
  const CommandResult a_again = Train(1, dir, Join(a, {"--resume"}));
  ASSERT_EQ(a_again.exit_code, 0) << a_again.err;
  EXPECT_NE(a_again.err.find("resumed from " + (ckpt / "ckpt-0000000066.bin").string()),
            std::string::npos)
      << a_again.err;

  // Settings no checkpoint was written with: refused before any step, naming the difference
  // with the newest checkpoint (B's).
  const CommandResult neither = Train(1, dir, Join(a, {"--set", "lr=0.01", "--resume"}));
  EXPECT_EQ(neither.exit_code, 2) << neither.err;
  EXPECT_NE(neither.err.find("is of this run"), std::string::npos) << neither.err;
  EXPECT_NE(neither.err.find("lr 0.001 in the checkpoint, 0.01 here"), std::string::npos)
      << neither.err;
}

// A finished run leaves its final checkpoint whatever checkpoint_every says (before, the steps
// after the last periodic one were on no disk), and --resume of it evaluates the final model
// without training. --resume-from FILE takes one checkpoint: another run's only with --force,
// and then this run keeps its own checkpoints apart from that file's.
TEST(TrainResumeTest, AFinishedRunEndsOnACheckpointAndResumeFromNeedsForceForAnotherRuns) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const fs::path ckpt = dir / "ckpt";
  const fs::path final_file = ckpt / "ckpt-0000000022.bin";
  const std::vector<std::string> a = {"--set", "epochs=1", "--set", "checkpoint_every=100",
                                      "--set", "accumulate=4"};
  const CommandResult first = Train(1, dir, Join(a, {"--weights-out", (dir / "a.npy").string()}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(fs::exists(final_file)) << "no checkpoint at the end of the run";

  const CommandResult again = Train(1, dir, Join(a, {"--resume", "--weights-out", (dir / "a2.npy").string()}));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("resumed from " + final_file.string()), std::string::npos) << again.err;
  EXPECT_EQ(ReadWeights(dir / "a.npy"), ReadWeights(dir / "a2.npy")) << "a finished run trained on";

  // Run B: another lr, one more epoch, from A's final checkpoint.
  const std::vector<std::string> b = {"--set", "epochs=2", "--set", "checkpoint_every=100",
                                      "--set", "accumulate=4", "--set", "lr=0.001"};
  const CommandResult refused = Train(1, dir, Join(b, {"--resume-from", final_file.string()}));
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("is another run's checkpoint (lr 0.003 in the checkpoint, 0.001 here)"),
            std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;

  const CommandResult forced = Train(1, dir, Join(b, {"--resume-from", final_file.string(), "--force"}));
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("--force: starting from " + final_file.string()), std::string::npos)
      << forced.err;
  EXPECT_NE(forced.err.find("resumed from "), std::string::npos) << forced.err;
  std::vector<std::string> top, mine;
  for (const auto& e : fs::directory_iterator(ckpt)) {
    if (e.is_regular_file()) top.push_back(e.path().filename().string());
    if (!e.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(e.path())) mine.push_back(f.path().filename().string());
  }
  EXPECT_EQ(top, (std::vector<std::string>{"ckpt-0000000022.bin"})) << "run A's folder was written to";
  EXPECT_EQ(mine, (std::vector<std::string>{"ckpt-0000000044.bin"})) << "run B's own checkpoints";

  const CommandResult lone_force = Train(1, dir, Join(a, {"--force"}));
  EXPECT_EQ(lone_force.exit_code, 2) << lone_force.err;
  EXPECT_NE(lone_force.err.find("--force goes with --resume-from"), std::string::npos)
      << lone_force.err;
}

TEST(TrainResumeTest, TwoRankCheckpointResumesOnOneRankWithTheSameMath) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  // 1,437 training rows: 22 steps an epoch, 66 in all; checkpoints every 10.
  const std::vector<std::string> common = {"--set", "epochs=3", "--set", "checkpoint_every=10"};
  const CommandResult straight =
      Train(2, dir, Join(common, {"--weights-out", (dir / "straight.npy").string()}));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  fs::remove_all(dir / "ckpt");
  const CommandResult first = Train(2, dir, Join(common, {"--stop-after-steps", "25"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(fs::exists(dir / "ckpt" / "ckpt-0000000020.bin"));

  // Three ranks cannot share global_batch 64: refused before any step, the checkpoint kept.
  const CommandResult three = Train(3, dir, Join(common, {"--resume"}));
  EXPECT_EQ(three.exit_code, 2) << three.err;
  EXPECT_NE(three.err.find("global_batch 64 is not divisible by the 3 ranks; a resumed run keeps "
                           "its checkpoint's global batch: resume on 1, 2, 4, 8, 16, 32 or 64 "
                           "ranks"),
            std::string::npos)
      << three.err;

  // The config says micro_batch 16 x accumulate 2, which one rank cannot use: the resume keeps
  // the micro-batch and doubles the accumulation, and says so.
  const fs::path metrics = dir / "one.json";
  const CommandResult one = Train(1, dir, Join(common, {"--resume", "--metrics-out",
                                                        metrics.string(), "--weights-out",
                                                        (dir / "one.npy").string()}));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.err.find("--resume on 1 ranks from a checkpoint of 2 ranks (micro_batch 16 x "
                         "accumulate 2): micro_batch 16 x accumulate 4 keeps global_batch 64"),
            std::string::npos)
      << one.err;
  const auto doc = ReadMetrics(metrics);
  EXPECT_EQ(doc["world_size"].GetInt(), 1);
  EXPECT_EQ(doc["accumulate"].GetUint64(), 4u);
  EXPECT_EQ(doc["steps"].GetInt64(), 66 - 20);
  const auto a = ReadWeights(dir / "straight.npy");
  const auto b = ReadWeights(dir / "one.npy");
  ASSERT_FALSE(a.empty());
  EXPECT_LT(RelativeDifference(b, a), 1e-6);
}

// The straight run every interrupted one must match, and how they are launched.
class TrainStopTest : public ::testing::Test {
 protected:
  // 1500 epochs (33,000 steps: 8 s on an idle 2-core VM, 25 s on a loaded one) so a signal
  // sent after the first checkpoint lands mid-run even on a fast machine, with mpirun's own
  // delays (below, 3 s) added. 600 epochs took 3.1 s once startup got faster, and a run could
  // finish before mpirun passed the signal on.
  static constexpr int kEpochs = 1500;
  static constexpr int kSteps = kEpochs * 22;  // 22 steps per epoch of the digits config
  const std::vector<std::string> common_ = {"--set", "epochs=" + std::to_string(kEpochs),
                                            "--set", "precision=fp16",
                                            "--set", "checkpoint_every=100"};

  itest::Process Launch(const std::string& name, const std::vector<std::string>& mpirun_extra,
                        const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {COUPLER_MPIEXEC, "--allow-run-as-root", "--oversubscribe",
                                     "--timeout", "300"};
    argv.insert(argv.end(), mpirun_extra.begin(), mpirun_extra.end());
    argv = Join(argv, {"-np", "2", COUPLER_BINARY, "train", Config().string(), "--set",
                       "checkpoint_dir=" + (dir_ / "ckpt").string()});
    argv = Join(Join(argv, common_), extra);
    itest::Process::Options o;
    o.output = dir_.path();
    o.name = name;
    o.deadline = std::chrono::seconds(300);
    return itest::Process::Spawn(argv, o);
  }

  void WaitForFirstCheckpoint(itest::Process& job) {
    ASSERT_TRUE(itest::WaitUntil([&] { return HasCheckpoint(dir_ / "ckpt"); },
                                 std::chrono::seconds(120)))
        << job.err();
  }

  // Resumes after a stop and checks the end is the straight run's, bit for bit.
  void ResumeAndCompare(const fs::path& history) {
    const fs::path straight_weights = dir_ / "straight.npy";
    if (!fs::exists(straight_weights)) {
      const CommandResult straight = Train(2, dir_, Join(common_, {"--set",
          "checkpoint_dir=" + (dir_ / "straight-ckpt").string(), "--metrics-out",
          (dir_ / "straight.json").string(), "--weights-out", straight_weights.string()}));
      ASSERT_EQ(straight.exit_code, 0) << straight.err;
    }
    const CommandResult resumed =
        Train(2, dir_, Join(common_, {"--resume", "--metrics-out", (dir_ / "run.json").string(),
                                      "--weights-out", (dir_ / "resumed.npy").string()}));
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    EXPECT_NE(resumed.err.find("resumed from"), std::string::npos) << resumed.err;
    const auto a = ReadWeights(straight_weights);
    const auto b = ReadWeights(dir_ / "resumed.npy");
    ASSERT_FALSE(a.empty());
    EXPECT_TRUE(a == b) << "relative difference " << RelativeDifference(a, b);
    // One line per step 1..kSteps across the stop and the resume, as the straight run has.
    const auto lines = Lines(history);
    ASSERT_EQ(lines.size(), static_cast<size_t>(kSteps));
    for (size_t i = 0; i < lines.size(); ++i) {
      ASSERT_EQ(lines[i].rfind("{\"step\":" + std::to_string(i + 1) + ",", 0), 0u)
          << "line " << i << ": " << lines[i];
    }
    const auto straight_lines = Lines(dir_ / "straight.steps.jsonl");
    ASSERT_EQ(straight_lines.size(), lines.size());
    auto loss_of = [](const std::string& line) {
      return line.substr(0, line.find(",\"samples_per_s\""));
    };
    EXPECT_EQ(loss_of(lines.back()), loss_of(straight_lines.back()));
  }

  itest::TempDir dir_;
};

TEST_F(TrainStopTest, CtrlCOnMpirunCheckpointsAndResumesBitIdentical) {
  COUPLER_REQUIRE_DIGITS();
  // mpirun waits odls_base_sigkill_timeout, sends the ranks SIGTERM, and SIGKILLs them as long
  // again later. 3 s (the default is 1) leaves a loaded machine ample time to finish the step
  // and write the checkpoint; the run is long enough not to end inside the first 3 s.
  itest::Process job = Launch("ctrl-c", {"--mca", "odls_base_sigkill_timeout", "3"},
                              {"--metrics-out", (dir_ / "run.json").string()});
  ASSERT_TRUE(job.started());
  WaitForFirstCheckpoint(job);
  job.Signal(SIGINT);
  const auto code = job.WaitExit(std::chrono::seconds(60));
  ASSERT_TRUE(code.has_value()) << job.err();
  EXPECT_NE(*code, 0);
  const std::string err = job.err();
  const size_t at = err.find("coupler train: stopped at step ");
  ASSERT_NE(at, std::string::npos) << err;
  EXPECT_NE(err.find("/" + std::to_string(kSteps) + " (epoch ", at), std::string::npos) << err;
  EXPECT_NE(err.find(") on signal 15:", at), std::string::npos) << err;  // mpirun's SIGTERM
  EXPECT_NE(err.find("resume with: mpirun -np 2 coupler train " + Config().string() + " --set " +
                         "checkpoint_dir=" + (dir_ / "ckpt").string() +
                         " --set epochs=" + std::to_string(kEpochs),
                     at),
            std::string::npos)
      << err;
  // The command repeats the outputs the run was asked for (before, it dropped --metrics-out).
  EXPECT_NE(err.find("--resume --metrics-out " + (dir_ / "run.json").string() + "\n", at),
            std::string::npos)
      << err;
  // The checkpoint it names is the step it stopped at.
  const int64_t step = std::stoll(err.substr(at + std::string("coupler train: stopped at step ").size()));
  EXPECT_GT(step, 100);
  EXPECT_LT(step, kSteps);
  char name[32];
  std::snprintf(name, sizeof(name), "ckpt-%010lld.bin", static_cast<long long>(step));
  EXPECT_NE(err.find("checkpoint " + (dir_ / "ckpt" / name).string()), std::string::npos) << err;
  EXPECT_TRUE(fs::exists(dir_ / "ckpt" / name));
  EXPECT_EQ(Lines(dir_ / "run.steps.jsonl").size(), static_cast<size_t>(step));
  ResumeAndCompare(dir_ / "run.steps.jsonl");
}

TEST_F(TrainStopTest, SigtermToOneRankStopsTheWholeGroupAtOneStep) {
  COUPLER_REQUIRE_DIGITS();
  // As a scheduler preempting one task would: only rank 1 hears it. mpirun is not signalled, so
  // it passes the ranks' exit code on.
  itest::Process job = Launch("sigterm", {}, {"--metrics-out", (dir_ / "run.json").string()});
  ASSERT_TRUE(job.started());
  WaitForFirstCheckpoint(job);
  pid_t victim = 0;
  for (auto [rank, pid] : TrainRanks(job.pid())) {
    if (rank == 1) victim = pid;
  }
  ASSERT_NE(victim, 0);
  ASSERT_EQ(::kill(victim, SIGTERM), 0);
  const auto code = job.WaitExit(std::chrono::seconds(60));
  ASSERT_TRUE(code.has_value()) << job.err();
  EXPECT_EQ(*code, 3) << job.err();  // stopped on request
  EXPECT_NE(job.err().find("coupler train: stopped at step "), std::string::npos) << job.err();
  EXPECT_NE(job.err().find("(epoch "), std::string::npos) << job.err();
  EXPECT_NE(job.err().find(" asked by another rank:"), std::string::npos) << job.err();
  EXPECT_FALSE(fs::exists(dir_ / "run.json")) << "a stopped run has no final metrics";
  ResumeAndCompare(dir_ / "run.steps.jsonl");
}

}  // namespace
}  // namespace coupler::train_test
