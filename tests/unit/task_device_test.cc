// Where a loose task's kernels run: the --gpus list, the per-thread placement, the device label,
// and RunTask's record of what actually ran — including the fallback of a task placed on a GPU
// that this machine or build cannot use (the path every CPU-only machine exercises for real).
#include "worker/task_device.h"

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/device.h"
#include "runtime/io/shard_file.h"
#include "runtime/io/npy_writer.h"
#include "runtime/io/table.h"
#include "runtime/io/temp_dir.h"
#include "tests/unit/schema_defaults.h"
#include "worker/task_runner.h"

namespace coupler::worker {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(ParseGpuList, AllAndEmptyTakeEveryVisibleDevice) {
  EXPECT_THAT(*ParseGpuList("", 3), ElementsAre(0, 1, 2));
  EXPECT_THAT(*ParseGpuList("all", 2), ElementsAre(0, 1));
  EXPECT_THAT(*ParseGpuList("all", 0), IsEmpty());
}

TEST(ParseGpuList, NoneMeansCpuOnly) { EXPECT_THAT(*ParseGpuList("none", 4), IsEmpty()); }

TEST(ParseGpuList, OrdinalsKeepTheirOrder) {
  EXPECT_THAT(*ParseGpuList("2,0", 3), ElementsAre(2, 0));
  EXPECT_THAT(*ParseGpuList("1", 2), ElementsAre(1));
}

TEST(ParseGpuList, RejectsBadEntriesNamingThem) {
  for (const char* bad : {"x", "0,", ",0", "-1", "0,,1", "1.5", "0 ", "all,0"}) {
    const auto parsed = ParseGpuList(bad, 4);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("--gpus")) << bad;
  }
}

TEST(ParseGpuList, RejectsInvisibleAndRepeatedDevices) {
  const auto invisible = ParseGpuList("0,2", 2);
  ASSERT_FALSE(invisible.ok());
  EXPECT_THAT(invisible.status().message(), HasSubstr("GPU 2 is not visible (2 CUDA device"));
  const auto none_here = ParseGpuList("0", 0);
  ASSERT_FALSE(none_here.ok());
  EXPECT_THAT(none_here.status().message(), HasSubstr("0 CUDA device(s)"));
  const auto twice = ParseGpuList("1,1", 2);
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.status().message(), HasSubstr("listed twice"));
}

TEST(PlacementForSlot, ThreadsTakeTheGpusInTurn) {
  const std::vector<int> gpus = {3, 5};
  EXPECT_EQ(PlacementForSlot(gpus, 0), (TaskPlacement{kernels::Backend::kCuda, 3}));
  EXPECT_EQ(PlacementForSlot(gpus, 1), (TaskPlacement{kernels::Backend::kCuda, 5}));
  EXPECT_EQ(PlacementForSlot(gpus, 2), (TaskPlacement{kernels::Backend::kCuda, 3}));
  EXPECT_EQ(PlacementForSlot({}, 7), TaskPlacement{});
  EXPECT_EQ(PlacementForSlot({}, 7).backend, kernels::Backend::kCpu);
}

TEST(DeviceLabel, NamesTheBackendAndOrdinal) {
  EXPECT_EQ(DeviceLabel({}), "cpu");
  EXPECT_EQ(DeviceLabel({kernels::Backend::kCuda, 1}), "cuda:1");
}

class TaskPlacementRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::TempDir::Create("task-device-");
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_.emplace(std::move(dir).value());
    io::Table table;
    ASSERT_TRUE(table.AddColumn(io::Column::Float32("x", {-3.0f, 0.5f, 9.0f})).ok());
    ASSERT_TRUE(io::WriteNpyAtomic(Input(), table).ok());
  }
  std::string Input() const { return dir_->File("in.npy"); }
  std::string Output() const { return dir_->File("out.npy"); }

  wire::TaskSpec ClipSpec() const {
    wire::TaskSpec spec;
    spec.job_id = "job";
    spec.task_id = 1;
    spec.op = "clip";
    spec.shard_index = 0;
    spec.input_paths = {Input()};
    spec.output_path = Output();
    spec.params = {{"min", -1.0}, {"max", 1.0}};
    return spec;
  }

  void ExpectClipped() const {
    auto table = io::ReadShardFile(Output());
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    const auto values = table->column(0).values<float>();
    EXPECT_THAT(std::vector<float>(values.begin(), values.end()), ElementsAre(-1.0f, 0.5f, 1.0f));
  }

  std::optional<io::TempDir> dir_;
};

TEST_F(TaskPlacementRunTest, CpuPlacementRunsOnTheCpu) {
  const wire::TaskOutcome outcome = RunTask(ClipSpec(), nullptr, {});
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(outcome.device, "cpu");
  EXPECT_FALSE(outcome.gpu_requested_but_cpu);
  ExpectClipped();
}

TEST_F(TaskPlacementRunTest, GpuTaskWithoutAUsableGpuRunsOnTheCpuAndIsFlagged) {
  if (kernels::HaveCudaDevice()) GTEST_SKIP() << "a CUDA device is present";
  // Placed on GPU 0 in a build or on a machine that has none: the CUDA twin answers
  // Unavailable, the task still succeeds on the CPU twin, and its outcome says so.
  wire::TaskSpec spec = ClipSpec();
  spec.gpus = 1;
  const wire::TaskOutcome outcome = RunTask(spec, nullptr, {kernels::Backend::kCuda, 0});
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(outcome.device, "cpu");
  EXPECT_TRUE(outcome.gpu_requested_but_cpu);
  ExpectClipped();

  spec.gpus = 0;
  spec.gpu_memory_bytes = 1 << 20;
  EXPECT_TRUE(RunTask(spec, nullptr, {kernels::Backend::kCuda, 0}).gpu_requested_but_cpu);
  spec.gpu_memory_bytes = 0;
  EXPECT_FALSE(RunTask(spec, nullptr, {kernels::Backend::kCuda, 0}).gpu_requested_but_cpu);
}

TEST_F(TaskPlacementRunTest, OpsWithoutCudaKernelsIgnoreTheGpuPlacement) {
  wire::TaskSpec spec = ClipSpec();
  spec.op = "noop";
  spec.params = WithSchemaDefaults("noop", {});
  spec.gpus = 1;
  const wire::TaskOutcome outcome = RunTask(spec, nullptr, {kernels::Backend::kCuda, 0});
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(outcome.device, "cpu");
  EXPECT_TRUE(outcome.gpu_requested_but_cpu);
}

TEST_F(TaskPlacementRunTest, GpuPlacementRunsOnTheGpuWhenOneIsThere) {
  if (!kernels::HaveCudaDevice()) GTEST_SKIP() << "no CUDA device";
  ASSERT_TRUE(kernels::UseCudaDevice(0).ok());
  wire::TaskSpec spec = ClipSpec();
  spec.gpus = 1;
  const wire::TaskOutcome outcome = RunTask(spec, nullptr, {kernels::Backend::kCuda, 0});
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(outcome.device, "cuda:0");
  EXPECT_FALSE(outcome.gpu_requested_but_cpu);
  ExpectClipped();
}

// Fenced GPUs (the coordinator's, from an XID or an admin) take no new task: a thread whose
// own GPU is fenced runs on the next one in turn that is not, and on the CPU when all are.
TEST(TaskDeviceTest, AFencedGpuIsSkippedForTheNextOneAndAllFencedMeansTheCpu) {
  const std::vector<int> gpus = {0, 1, 2};
  EXPECT_EQ(PlacementAvoiding(gpus, 1, std::vector<int>{}), (TaskPlacement{kernels::Backend::kCuda, 1}));
  EXPECT_EQ(PlacementAvoiding(gpus, 1, std::vector<int>{1}), (TaskPlacement{kernels::Backend::kCuda, 2}));
  EXPECT_EQ(PlacementAvoiding(gpus, 2, std::vector<int>{1, 2}), (TaskPlacement{kernels::Backend::kCuda, 0}));
  EXPECT_EQ(PlacementAvoiding(gpus, 4, std::vector<int>{0, 1, 2}), TaskPlacement{});
  EXPECT_EQ(PlacementAvoiding(std::vector<int>{}, 0, std::vector<int>{}), TaskPlacement{});
}

}  // namespace
}  // namespace coupler::worker
