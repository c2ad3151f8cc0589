// The trainer's contract, with ranks as threads over the in-process communicator: the math is
// independent of how the global batch is cut (ranks x accumulate x micro-batch), accumulation
// costs one all-reduce per bucket per step, OOM back-off keeps the math, fp16 overflow is
// skipped and scaled down, and a resumed run is bit-identical.
#include <gtest/gtest.h>

#include <filesystem>

#include "runtime/io/temp_dir.h"
#include "kernels/train_kernels.h"
#include "tests/unit/train_test_util.h"
#include "train/memory/micro_batch_plan.h"

namespace coupler::train {
namespace {

using testing::RelativeDifference;
using testing::RunGroup;
using testing::SmallConfig;

Split TeacherSplit() { return SplitDataset(testing::TeacherDataset(320, 8, 3, 99), 0.25, 5); }

TrainReport RunOk(int ranks, const TrainerOptions& options, const Split& split) {
  auto results = RunGroup(ranks, options, split);
  for (int r = 0; r < ranks; ++r) {
    EXPECT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].status().ToString();
    if (!results[r].ok()) return {};
  }
  for (int r = 1; r < ranks; ++r) EXPECT_EQ(results[r]->weights, results[0]->weights);
  return std::move(results[0]).value();
}

TEST(TrainerTest, LearnsTheTeacher) {
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.epochs = 15;
  const TrainReport report = RunOk(2, options, TeacherSplit());
  EXPECT_GT(report.test_accuracy, 0.85);
  EXPECT_LT(report.final_loss, 0.5);
  EXPECT_EQ(report.world_size, 2);
  EXPECT_EQ(report.steps, 15 * (240 / 32));
}

TEST(TrainerTest, TwoRanksMatchOneRankWithTwiceTheAccumulation) {
  const Split split = TeacherSplit();
  for (Optimizer opt : {Optimizer::kAdamW, Optimizer::kSgd}) {
    TrainerOptions two;
    two.config = SmallConfig();
    two.config.optimizer = opt;
    two.config.accumulate = 2;  // 8 x 2 x 2 ranks = 32
    TrainerOptions one = two;
    one.config.accumulate = 4;  // 8 x 4 x 1 rank = 32
    const TrainReport a = RunOk(2, two, split);
    const TrainReport b = RunOk(1, one, split);
    EXPECT_LT(RelativeDifference(a.weights, b.weights), 1e-5) << OptimizerName(opt);
  }
}

TEST(TrainerTest, AccumulationCostsOneAllReducePerBucketPerStep) {
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.accumulate = 4;
  options.config.micro_batch = 4;
  options.config.bucket_mb = 512.0 / (1024 * 1024);  // 512-byte buckets: several per step
  const TrainReport report = RunOk(2, options, TeacherSplit());
  const size_t params = 8 * 32 + 32 + 32 * 3 + 3;
  EXPECT_EQ(report.buckets_per_step, (params + 2 + 127) / 128);
  EXPECT_GT(report.buckets_per_step, 1u);
  EXPECT_EQ(report.step_allreduces, static_cast<size_t>(report.steps) * report.buckets_per_step);
}

TEST(TrainerTest, OutOfMemoryHalvesTheMicroBatchAndKeepsTheMath) {
  const Split split = TeacherSplit();
  TrainerOptions free_run;
  free_run.config = SmallConfig();
  free_run.config.micro_batch = 16;
  free_run.config.accumulate = 1;
  const TrainReport unconstrained = RunOk(2, free_run, split);

  TrainerOptions tight = free_run;
  const memory::MemoryEstimate estimate =
      memory::EstimateMemory(ShapeOf(tight.config), kernels::kGemmWorkspaceBytes);
  tight.device_memory_limit = estimate.Total(5);  // fits 4 rows, not 8 or 16
  const TrainReport constrained = RunOk(2, tight, split);
  EXPECT_EQ(constrained.micro_batch, 4u);
  EXPECT_EQ(constrained.accumulate, 4u);
  EXPECT_GT(constrained.step_attempts, constrained.steps);  // the first step was retried
  EXPECT_LE(constrained.peak_device_bytes, tight.device_memory_limit);
  EXPECT_LT(RelativeDifference(constrained.weights, unconstrained.weights), 1e-5);
}

TEST(TrainerTest, AutoMicroBatchFitsTheLimit) {
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.micro_batch = 0;
  const memory::MemoryEstimate estimate =
      memory::EstimateMemory(ShapeOf(options.config), kernels::kGemmWorkspaceBytes);
  options.device_memory_limit = estimate.Total(9);
  const TrainReport report = RunOk(2, options, TeacherSplit());
  EXPECT_EQ(report.micro_batch, 8u);  // the largest divisor of 16 rows per rank that fits
  EXPECT_EQ(report.accumulate, 2u);
  EXPECT_EQ(report.step_attempts, report.steps);
}

TEST(TrainerTest, InfGradientsSkipTheStepAndHalveTheLossScale) {
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.precision = ElementType::kFloat16;
  options.inject_inf_first = 2;
  options.inject_inf_last = 3;
  const TrainReport report = RunOk(2, options, TeacherSplit());
  EXPECT_EQ(report.skipped_steps, 2);
  EXPECT_EQ(report.loss_scale, 16384.0f);  // 2^16 halved twice, fewer than 2000 clean steps
  EXPECT_GT(report.test_accuracy, 0.5);
}

TEST(TrainerTest, LossScaleAtItsMinimumIsAClearError) {
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.precision = ElementType::kFloat16;
  options.inject_inf_first = 0;
  options.inject_inf_last = 1000;
  auto results = RunGroup(2, options, TeacherSplit());
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].status().code(), StatusCode::kAborted);
  EXPECT_NE(results[0].status().message().find("minimum"), std::string::npos)
      << results[0].status().ToString();
}

TEST(TrainerTest, StalledRankEndsTheStepWithAnErrorNamingIt) {
  TrainerOptions options;
  options.config = SmallConfig();
  comm::InProcessGroup group(2, std::chrono::milliseconds(500));
  // Rank 1 never shows up: rank 0's first all-reduce must give up, not hang.
  auto result =
      RunTraining(options, TeacherSplit(), TrainCommunicators::Host(group.communicator(0)));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kDeadlineExceeded);
  const std::string& message = result.status().message();
  EXPECT_NE(message.find("step 0"), std::string::npos) << message;
  EXPECT_NE(message.find("AllReduce"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 did not arrive"), std::string::npos) << message;
}

// Forwards to a host communicator but says it takes device memory, as NCCL does.
class DeviceMemoryCommunicator final : public comm::Communicator {
 public:
  explicit DeviceMemoryCommunicator(comm::Communicator& inner)
      : Communicator(inner.timeout(), comm::MemorySpace::kDevice), inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Status AllReduce(const void* send, void* recv, size_t count, ElementType type,
                   comm::ReduceOp op) override {
    return inner_.AllReduce(send, recv, count, type, op);
  }
  Status Broadcast(void* buf, size_t count, ElementType type, int root) override {
    return inner_.Broadcast(buf, count, type, root);
  }
  Status Barrier() override { return inner_.Barrier(); }

 private:
  comm::Communicator& inner_;
};

TEST(TrainerTest, EachCommunicatorMustTakeTheMemoryItIsUsedFor) {
  TrainerOptions options;
  options.config = SmallConfig();
  comm::InProcessGroup group(1);
  DeviceMemoryCommunicator device(group.communicator(0));
  // A CPU model's gradients are in host memory: a device communicator would get host pointers.
  auto gradients = RunTraining(options, TeacherSplit(), {group.communicator(0), device});
  ASSERT_FALSE(gradients.ok());
  EXPECT_EQ(gradients.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(gradients.status().message().find("the gradient communicator of a cpu model must "
                                              "take host memory, but this one takes device"),
            std::string::npos)
      << gradients.status().ToString();
  auto host = RunTraining(options, TeacherSplit(), {device, group.communicator(0)});
  ASSERT_FALSE(host.ok());
  EXPECT_EQ(host.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(host.status().message().find("the host communicator must take host memory"),
            std::string::npos)
      << host.status().ToString();
}

TEST(TrainerTest, HostAndGradientCommunicatorsMustBeOneGroup) {
  TrainerOptions options;
  options.config = SmallConfig();
  comm::InProcessGroup one(1);
  comm::InProcessGroup two(2);
  auto result = RunTraining(options, TeacherSplit(), {two.communicator(0), one.communicator(0)});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("not one group"), std::string::npos)
      << result.status().ToString();
}

TEST(TrainerTest, ResumedRunIsBitIdentical) {
  const Split split = TeacherSplit();
  auto dir = io::TempDir::Create("coupler-ckpt");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.precision = ElementType::kFloat16;
  options.config.checkpoint_dir = dir->path();
  options.config.checkpoint_every = 5;
  const TrainReport straight = RunOk(2, options, split);

  std::filesystem::remove_all(dir->path());
  TrainerOptions interrupted = options;
  interrupted.stop_after_steps = 12;  // last checkpoint at step 10
  RunOk(2, interrupted, split);
  TrainerOptions resumed = options;
  resumed.resume = true;
  const TrainReport rest = RunOk(2, resumed, split);
  EXPECT_EQ(rest.steps, straight.steps - 10);
  EXPECT_EQ(rest.weights, straight.weights);  // bit for bit
}

TEST(TrainerTest, ResumeRefusesAnotherModelsCheckpoint) {
  const Split split = TeacherSplit();
  auto dir = io::TempDir::Create("coupler-ckpt");
  ASSERT_TRUE(dir.ok());
  TrainerOptions options;
  options.config = SmallConfig();
  options.config.checkpoint_dir = dir->path();
  options.config.checkpoint_every = 5;
  options.config.epochs = 1;
  options.config.accumulate = 4;  // one rank
  RunOk(1, options, split);
  options.config.layers = {8, 16, 3};
  options.resume = true;
  auto results = RunGroup(1, options, split);
  ASSERT_FALSE(results[0].ok());
  EXPECT_NE(results[0].status().message().find("layers=8,32,3"), std::string::npos)
      << results[0].status().ToString();
}

}  // namespace
}  // namespace coupler::train
