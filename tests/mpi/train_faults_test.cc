// `coupler train` when things go wrong: too little device memory, overflowing fp16 gradients,
// a rank killed mid-run. Each must end in the documented way, never a hang.
#include <signal.h>

#include <set>

#include "tests/mpi/train_harness.h"

namespace coupler::train_test {
namespace {

TEST(TrainFaultsTest, TightMemoryLimitBacksOffWithTheSameMath) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const std::vector<std::string> common = {"--set", "epochs=8", "--set", "micro_batch=16",
                                           "--set", "accumulate=2"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };
  const CommandResult free_run = Train(2, dir, with({"--weights-out", (dir / "free.npy").string()}));
  ASSERT_EQ(free_run.exit_code, 0) << free_run.err;
  // 150 KiB of fixed state (weights, gradients, AdamW moments) leaves room for 8 rows, not 16.
  const fs::path metrics = dir / "metrics.json";
  const CommandResult tight =
      Train(2, dir, with({"--device-memory-limit", "170KiB", "--metrics-out", metrics.string(),
                          "--weights-out", (dir / "tight.npy").string()}));
  ASSERT_EQ(tight.exit_code, 0) << tight.err;
  EXPECT_NE(tight.err.find("micro_batch 16 -> 8, accumulate 2 -> 4"), std::string::npos)
      << tight.err;
  EXPECT_NE(tight.err.find("out of device memory"), std::string::npos) << tight.err;
  const auto doc = ReadMetrics(metrics);
  EXPECT_EQ(doc["micro_batch"].GetUint64(), 8u);
  EXPECT_EQ(doc["accumulate"].GetUint64(), 4u);
  EXPECT_LE(doc["peak_device_bytes"].GetUint64(), 170u * 1024);
  EXPECT_LT(RelativeDifference(ReadWeights(dir / "tight.npy"), ReadWeights(dir / "free.npy")),
            1e-5);
}

TEST(TrainFaultsTest, InfGradientsSkipTheStepAndHalveTheScale) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const CommandResult r = Train(2, dir, {"--set", "precision=fp16", "--set", "epochs=2",
                                         "--inject-inf-grad", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("step 5: non-finite gradients, step skipped; loss scale 65536 -> 32768"),
            std::string::npos)
      << r.err;
}

TEST(TrainFaultsTest, MinimumLossScaleIsAClearError) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const CommandResult r = Train(2, dir, {"--set", "precision=fp16", "--set", "epochs=2",
                                         "--inject-inf-grad", "0-40"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("minimum"), std::string::npos) << r.err;
}

TEST(TrainFaultsTest, DeviceCudaWithoutADeviceIsABadOption) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const CommandResult r = Train(1, dir, {"--set", "epochs=1", "--device", "cuda"});
  if (r.exit_code == 0) GTEST_SKIP() << "a CUDA device is visible here";
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--device cuda"), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.find("no CUDA device is visible") != std::string::npos ||
              r.err.find("built without CUDA") != std::string::npos)
      << r.err;
}

TEST(TrainFaultsTest, DeviceCpuIsRecordedInMetricsAndSummary) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const fs::path metrics = dir / "metrics.json";
  const CommandResult r = Train(2, dir, {"--set", "epochs=1", "--device", "cpu", "--metrics-out",
                                         metrics.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = ReadMetrics(metrics);
  EXPECT_STREQ(doc["device"].GetString(), "cpu");
  EXPECT_STREQ(doc["communicator"].GetString(), "mpi");
  EXPECT_NE(r.out.find("device cpu communicator mpi"), std::string::npos) << r.out;
  const CommandResult bad = Train(1, dir, {"--set", "epochs=1", "--device", "tpu"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--device must be auto, cpu or cuda"), std::string::npos) << bad.err;
}

TEST(TrainFaultsTest, KilledRankEndsTheJobWithinTheDeadline) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  itest::Process::Options o;
  o.output = dir.path();
  o.name = "mpirun";
  o.deadline = std::chrono::seconds(240);
  itest::Process job = itest::Process::Spawn(
      {COUPLER_MPIEXEC, "--allow-run-as-root", "--oversubscribe", "--timeout", "300", "-np", "2",
       COUPLER_BINARY, "train", Config().string(), "--set", "epochs=100000", "--set",
       "checkpoint_every=0", "--collective-timeout", "20"},
      o);
  ASSERT_TRUE(job.started());
  // Wait for training to be under way (rank 0's first progress line), then kill rank 1.
  ASSERT_TRUE(itest::WaitUntil([&] { return job.err().find("samples/s") != std::string::npos; },
                               std::chrono::seconds(120)))
      << job.err();
  pid_t victim = 0;
  ASSERT_TRUE(itest::WaitUntil(
      [&] {
        for (auto [rank, pid] : TrainRanks(job.pid())) {
          if (rank == 1) victim = pid;
        }
        return victim != 0;
      },
      std::chrono::seconds(10)));
  const auto killed_at = itest::Clock::now();
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  const auto code = job.WaitExit(std::chrono::seconds(60));
  ASSERT_TRUE(code.has_value()) << "the job did not end within 60 s of losing a rank\n"
                                << job.err();
  EXPECT_NE(*code, 0);
  EXPECT_LT(itest::Clock::now() - killed_at, std::chrono::seconds(60));
  const std::string err = job.err() + job.out();
  EXPECT_NE(err.find("rank 1"), std::string::npos) << err;
}

}  // namespace
}  // namespace coupler::train_test
