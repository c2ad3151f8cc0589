// `mpirun -np N coupler train examples/train-digits.yaml`, as a researcher runs it: accuracy in
// every precision, data-parallel equivalence across world sizes, one all-reduce per bucket per
// step under accumulation, and bit-identical resume from a checkpoint.
#include "tests/mpi/train_harness.h"

namespace coupler::train_test {
namespace {

TEST(TrainMpiTest, DigitsReachAccuracyInEveryPrecision) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  double fp32 = 0;
  for (const std::string precision : {"fp32", "fp16", "bf16"}) {
    const fs::path metrics = dir / ("metrics-" + precision + ".json");
    const CommandResult r = Train(2, dir, {"--set", "precision=" + precision, "--metrics-out",
                                           metrics.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto doc = ReadMetrics(metrics);
    const double accuracy = doc["test_accuracy"].GetDouble();
    EXPECT_EQ(doc["precision"].GetString(), precision);
    EXPECT_EQ(doc["world_size"].GetInt(), 2);
    EXPECT_GT(doc["peak_device_bytes"].GetUint64(), 0u);
    EXPECT_GT(doc["samples_per_s"].GetDouble(), 0.0);
    if (precision == "fp32") {
      fp32 = accuracy;
      EXPECT_GE(accuracy, 0.95) << r.err;
    } else {
      EXPECT_GE(accuracy, fp32 - 0.01) << precision << "\n" << r.err;
    }
    // Rank 0 reports progress with the loss scale and the micro-batch.
    EXPECT_NE(r.err.find("loss_scale"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("test_accuracy"), std::string::npos) << r.out;
  }
}

TEST(TrainMpiTest, TwoRanksEqualOneRankWithTwiceTheAccumulation) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const std::vector<std::string> common = {"--set", "epochs=8", "--set", "micro_batch=16"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };
  const CommandResult two = Train(2, dir, with({"--set", "accumulate=2", "--weights-out",
                                                (dir / "two.npy").string()}));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const CommandResult one = Train(1, dir, with({"--set", "accumulate=4", "--weights-out",
                                                (dir / "one.npy").string()}));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const auto a = ReadWeights(dir / "two.npy");
  const auto b = ReadWeights(dir / "one.npy");
  ASSERT_EQ(a.size(), 64u * 128 + 128 + 128 * 10 + 10);
  EXPECT_LT(RelativeDifference(a, b), 1e-5);
}

TEST(TrainMpiTest, FourRanksAccumulatingFourIssueOneAllReducePerBucket) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const fs::path metrics = dir / "metrics.json";
  const CommandResult r =
      Train(4, dir, {"--set", "micro_batch=4", "--set", "accumulate=4", "--set", "epochs=10",
                     "--set", "bucket_mb=0.01", "--metrics-out", metrics.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = ReadMetrics(metrics);
  const uint64_t buckets = doc["allreduce_buckets_per_step"].GetUint64();
  EXPECT_EQ(buckets, 4u);  // 9,612 floats in 10,485-byte buckets (2,621 floats each)
  EXPECT_EQ(doc["step_allreduces"].GetUint64(), doc["steps"].GetUint64() * buckets);
  EXPECT_EQ(doc["world_size"].GetInt(), 4);
  EXPECT_EQ(doc["accumulate"].GetUint64(), 4u);
  EXPECT_GE(doc["test_accuracy"].GetDouble(), 0.9);
}

TEST(TrainMpiTest, ResumedRunEndsBitIdentical) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const std::vector<std::string> common = {"--set", "epochs=6", "--set", "precision=fp16",
                                           "--set", "checkpoint_every=25"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), common.begin(), common.end());
    return more;
  };
  const CommandResult straight =
      Train(2, dir, with({"--weights-out", (dir / "straight.npy").string()}));
  ASSERT_EQ(straight.exit_code, 0) << straight.err;
  fs::remove_all(dir / "ckpt");
  const CommandResult first = Train(2, dir, with({"--stop-after-steps", "60"}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_TRUE(fs::exists(dir / "ckpt" / "ckpt-0000000050.bin"));
  const CommandResult resumed =
      Train(2, dir, with({"--resume", "--weights-out", (dir / "resumed.npy").string()}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("resumed from"), std::string::npos) << resumed.err;
  const auto a = ReadWeights(dir / "straight.npy");
  const auto b = ReadWeights(dir / "resumed.npy");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "relative difference " << RelativeDifference(a, b);
}

TEST(TrainMpiTest, InconsistentGlobalBatchIsBadInput) {
  COUPLER_REQUIRE_DIGITS();
  itest::TempDir dir;
  const CommandResult r = Train(2, dir, {"--set", "accumulate=3"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("global_batch 64 != micro_batch 16 x accumulate 3 x ranks 2"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace coupler::train_test
