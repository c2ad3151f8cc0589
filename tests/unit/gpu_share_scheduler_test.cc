// Fractional GPUs in the scheduler: tasks asking for `gpu_memory` are sent to a GPU worker only
// while a share fits on one of its devices (the worker's own best-fit rule), so the rest wait in
// the coordinator's queue where any worker with room may take them; CPU workers take shares
// only from a pool without GPUs; a share no device could ever hold is sent once to fail with
// its sizes instead of waiting forever.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/scheduler.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint64_t kGiB = uint64_t{1} << 30;

using testing::MakeJob;

// A worker with `slots` slots and one GPU per entry of `free_gib` (free memory at start).
wire::RegisterWorker Worker(const std::string& id, uint32_t slots,
                            std::vector<uint64_t> free_gib = {}) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.host = "host-" + id;
  w.slots = slots;
  w.prefetch = 0;
  for (size_t i = 0; i < free_gib.size(); ++i) {
    w.gpus.push_back({static_cast<uint32_t>(i), "test GPU", free_gib[i] * kGiB, free_gib[i] * kGiB, ""});
  }
  return w;
}

std::vector<std::string> NodesOf(const std::vector<wire::TaskSpec>& specs) {
  std::vector<std::string> out;
  for (const auto& s : specs) out.push_back(s.node_id);
  return out;
}

wire::TaskOutcome Ok(const wire::TaskSpec& spec) {
  wire::TaskOutcome o = testing::OutcomeOf(spec);
  o.device = "cuda:0";
  return o;
}

// Six 30 GiB shares; each GPU (80 GiB free, 76 GiB for shares) holds two at a time.
const char* kSharesJob = R"(name: shares
nodes:
  - {id: infer, op: noop, params: {tasks: 6}, resources: {gpu_memory: 30GiB}}
  - {id: cpu, op: noop, params: {tasks: 2}}
)";

TEST(GpuShareSchedulerTest, AWorkerIsSentOnlyTheSharesItsDevicesHoldNow) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", kSharesJob));
  s.RegisterWorker(Worker("g", 4, {80}), 0);
  // Two shares fill the device; the other slots take CPU work, not a third share.
  const auto first = s.Assign("g");
  EXPECT_THAT(NodesOf(first), ElementsAre("infer", "infer", "cpu", "cpu"));
  EXPECT_THAT(s.Assign("g"), IsEmpty());
  // A finished share frees room for exactly one more.
  EXPECT_EQ(s.OnOutcome("g", Ok(first[0])), OutcomeKind::kCommitted);
  EXPECT_THAT(NodesOf(s.Assign("g")), ElementsAre("infer"));
  EXPECT_THAT(s.Assign("g"), IsEmpty());
}

TEST(GpuShareSchedulerTest, SharesSpreadOverGpuWorkersAndSkipCpuWorkers) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", kSharesJob));
  s.RegisterWorker(Worker("cpu-only", 4), 0);
  s.RegisterWorker(Worker("g1", 4, {80}), 0);
  s.RegisterWorker(Worker("g2", 4, {40, 80}), 0);
  EXPECT_THAT(NodesOf(s.Assign("cpu-only")), ElementsAre("cpu", "cpu"));
  EXPECT_THAT(NodesOf(s.Assign("g1")), ElementsAre("infer", "infer"));
  // 40 GiB free holds one share (38 GiB for shares), 80 GiB two: three on g2.
  EXPECT_THAT(NodesOf(s.Assign("g2")), ElementsAre("infer", "infer", "infer"));
  EXPECT_THAT(s.Assign("cpu-only"), IsEmpty()) << "a share must wait for a GPU, not run on a CPU";
  const wire::CoordinatorStats stats = [&] {
    wire::CoordinatorStats st;
    s.FillPoolStats(st);
    return st;
  }();
  EXPECT_EQ(stats.queued_gpu_tasks, 1u);
  EXPECT_EQ(stats.queued_cpu_tasks, 0u);
}

TEST(GpuShareSchedulerTest, APoolWithoutGpusRunsSharesOnItsCpus) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", kSharesJob));
  s.RegisterWorker(Worker("a", 8), 0);
  EXPECT_EQ(s.Assign("a").size(), 8u);
}

TEST(GpuShareSchedulerTest, AShareNoDeviceCanHoldIsSentToFailNotKeptWaiting) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: big\nnodes:\n"
                         "  - {id: huge, op: noop, params: {tasks: 1}, resources: {gpu_memory: 200GiB}}\n"));
  s.RegisterWorker(Worker("cpu-only", 2), 0);
  s.RegisterWorker(Worker("g", 2, {80}), 0);
  EXPECT_THAT(s.Assign("cpu-only"), IsEmpty());
  EXPECT_THAT(NodesOf(s.Assign("g")), ElementsAre("huge"));
}

TEST(GpuShareSchedulerTest, LostAndCancelledTasksGiveTheirSharesBack) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: a\nnodes:\n"
                         "  - {id: x, op: noop, params: {tasks: 4}, resources: {gpu_memory: 30GiB}}\n"));
  s.RegisterWorker(Worker("g", 4, {80}), 0);
  ASSERT_EQ(s.Assign("g").size(), 2u);
  s.Cancel("j1");
  s.AddJob(MakeJob("j2", "name: b\nnodes:\n"
                         "  - {id: y, op: noop, params: {tasks: 4}, resources: {gpu_memory: 30GiB}}\n"));
  EXPECT_EQ(s.Assign("g").size(), 2u) << "the cancelled job's shares were not given back";
  // The worker restarts: what it held is lost, and its device is empty again.
  s.RegisterWorker(Worker("g", 4, {80}), 10);
  EXPECT_EQ(s.Assign("g").size(), 2u);
}

}  // namespace
}  // namespace coupler::coordinator
