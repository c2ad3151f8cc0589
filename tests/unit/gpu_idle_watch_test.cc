// The idle-GPU rule: a GPU worker running GPU tasks whose every sampled GPU stays under 5% busy
// for a minute is warned about; no GPU tasks, one busy GPU, or no samples at all (no NVML)
// never warn, and the warning clears once the GPUs work again. Driven by heartbeats with the
// clock passed in, through the scheduler where the GPU tasks are counted.
#include "coordinator/gpu_idle_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/scheduler.h"
#include "coordinator/status_report.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakeJob;

constexpr uint64_t kGiB = uint64_t{1} << 30;

std::vector<wire::GpuUsage> Busy(std::vector<uint32_t> percents) {
  std::vector<wire::GpuUsage> out;
  for (size_t i = 0; i < percents.size(); ++i) {
    out.push_back({static_cast<uint32_t>(i), percents[i], 2 * kGiB, 80 * kGiB});
  }
  return out;
}

// Heartbeats every second from `from_s` to `to_s` (inclusive) with the same samples; the
// changes they caused, in order.
std::vector<GpuWarningChange> Beats(GpuActivity& a, int from_s, int to_s,
                                    const std::vector<wire::GpuUsage>& samples,
                                    uint32_t gpu_tasks, const std::string& sampling = "nvml") {
  std::vector<GpuWarningChange> changes;
  for (int t = from_s; t <= to_s; ++t) {
    const GpuWarningChange c = ObserveGpus(a, "w-1", samples, sampling, gpu_tasks, t * 1000);
    if (c != GpuWarningChange::kNone) changes.push_back(c);
  }
  return changes;
}

TEST(GpuIdleWatchTest, WarnsOnceAfterAMinuteUnderFivePercentWithGpuTasksRunning) {
  GpuActivity a;
  EXPECT_THAT(Beats(a, 0, 59, Busy({3, 0}), 2), IsEmpty());
  EXPECT_EQ(a.warning, "");
  EXPECT_EQ(ObserveGpus(a, "w-1", Busy({3, 0}), "nvml", 2, 60'000), GpuWarningChange::kRaised);
  EXPECT_EQ(a.warning,
            "worker w-1 holds 2 GPU task(s) but its GPUs were under 5% busy for 60 s: the "
            "tasks probably run on the CPU");
  // Raised once: the next idle beats keep it standing without raising it again.
  EXPECT_THAT(Beats(a, 61, 90, Busy({4, 1}), 2), IsEmpty());
  EXPECT_THAT(a.warning, HasSubstr("for 90 s"));
}

TEST(GpuIdleWatchTest, IdleGpusWithoutGpuTasksAreNotWarnedAbout) {
  GpuActivity a;
  EXPECT_THAT(Beats(a, 0, 300, Busy({0, 0}), 0), IsEmpty());
  EXPECT_EQ(a.warning, "");
  EXPECT_EQ(a.samples, Busy({0, 0}));  // still recorded, for `coupler workers`
}

TEST(GpuIdleWatchTest, OneGpuAtFivePercentOrMoreKeepsItQuiet) {
  GpuActivity a;
  EXPECT_THAT(Beats(a, 0, 300, Busy({0, 5}), 2), IsEmpty());
  EXPECT_EQ(a.warning, "");
}

TEST(GpuIdleWatchTest, OneBusySampleRestartsTheMinute) {
  GpuActivity a;
  EXPECT_THAT(Beats(a, 0, 50, Busy({1}), 1), IsEmpty());
  EXPECT_THAT(Beats(a, 51, 51, Busy({40}), 1), IsEmpty());
  // Idle again from 52 s: a full minute later, not at 60 s.
  EXPECT_THAT(Beats(a, 52, 111, Busy({1}), 1), IsEmpty());
  EXPECT_THAT(Beats(a, 112, 112, Busy({1}), 1), ElementsAre(GpuWarningChange::kRaised));
}

TEST(GpuIdleWatchTest, MissingSamplesAreNeverTakenForIdleGpus) {
  GpuActivity a;
  const std::string why = "no NVML: libnvidia-ml.so.1: cannot open shared object file";
  EXPECT_THAT(Beats(a, 0, 300, {}, 2, why), IsEmpty());
  EXPECT_EQ(a.warning, "");
  EXPECT_EQ(a.sampling, why);
  // Nor does a gap without samples count towards the minute.
  EXPECT_THAT(Beats(a, 301, 340, Busy({0}), 2), IsEmpty());
  EXPECT_THAT(Beats(a, 341, 341, {}, 2, "nvmlDeviceGetUtilizationRates (GPU 0): GPU is lost"),
              IsEmpty());
  EXPECT_THAT(Beats(a, 342, 401, Busy({0}), 2), IsEmpty());
  EXPECT_THAT(Beats(a, 402, 402, Busy({0}), 2), ElementsAre(GpuWarningChange::kRaised));
}

TEST(GpuIdleWatchTest, ClearsWhenTheGpusWorkAgainOrTheGpuTasksEnd) {
  GpuActivity a;
  EXPECT_THAT(Beats(a, 0, 60, Busy({0}), 1), ElementsAre(GpuWarningChange::kRaised));
  EXPECT_THAT(Beats(a, 61, 61, Busy({85}), 1), ElementsAre(GpuWarningChange::kCleared));
  EXPECT_EQ(a.warning, "");
  EXPECT_THAT(Beats(a, 62, 122, Busy({0}), 1), ElementsAre(GpuWarningChange::kRaised));
  EXPECT_THAT(Beats(a, 123, 123, Busy({0}), 0), ElementsAre(GpuWarningChange::kCleared));
  EXPECT_EQ(a.warning, "");
}

// A worker with `slots` slots and one 80 GiB GPU (or none).
wire::RegisterWorker Worker(const std::string& id, uint32_t slots, bool gpu) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.host = "node";
  w.address = "host-" + id;
  w.slots = slots;
  if (gpu) w.gpus = {wire::GpuInfo{0, "test GPU", 80 * kGiB, 80 * kGiB, ""}};
  return w;
}

std::vector<wire::TaskAttempt> Attempts(const std::vector<wire::TaskSpec>& specs) {
  std::vector<wire::TaskAttempt> out;
  for (const auto& s : specs) out.push_back({s.job_id, s.task_id, s.attempt});
  return out;
}

wire::Heartbeat Beat(const std::string& id, std::vector<wire::GpuUsage> gpus,
                     const std::vector<wire::TaskSpec>& running) {
  wire::Heartbeat b;
  b.sender_id = id;
  b.gpus = std::move(gpus);
  b.gpu_sampling = "nvml";
  b.running = Attempts(running);
  return b;
}

TEST(GpuIdleWatchTest, CountsStartedGpuTasksNotPrefetchedOnesNorCpuTasks) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", R"(name: mixed
nodes:
  - {id: whole, op: noop, params: {tasks: 1}, resources: {gpus: 1}}
  - {id: share, op: noop, params: {tasks: 1}, resources: {gpu_memory: 1GiB}}
  - {id: cpu, op: noop, params: {tasks: 2}}
)"));
  s.RegisterWorker(Worker("g", 4, true), 0);
  const std::vector<wire::TaskSpec> sent = s.Assign("g");
  ASSERT_EQ(sent.size(), 4u);
  const WorkerEntry& w = *s.registry().Find("g");
  EXPECT_EQ(GpuTasksRunning(s, "g", w), 0u);  // held, none started yet
  s.MarkStarted("g", Attempts(sent));
  EXPECT_EQ(GpuTasksRunning(s, "g", w), 2u);  // the whole GPU and the share, not the CPU pair
}

TEST(GpuIdleWatchTest, CountsTheRanksOfAGpuGangOnEachOfItsWorkers) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: g\nnodes:\n  - {id: gang, op: mpi_exec, ranks: 3, "
                         "resources: {gpus: 1}, params: {command: run}}\n"));
  s.RegisterWorker(Worker("a", 2, true), 0);
  s.RegisterWorker(Worker("b", 2, true), 0);
  ASSERT_EQ(s.PlaceGangs(0).size(), 1u);
  const uint32_t on_a = GpuTasksRunning(s, "a", *s.registry().Find("a"));
  const uint32_t on_b = GpuTasksRunning(s, "b", *s.registry().Find("b"));
  EXPECT_EQ(on_a + on_b, 3u);
  EXPECT_EQ(on_a, s.registry().Find("a")->gang_ranks);
}

TEST(GpuIdleWatchTest, AGangThatAsksForNoGpuIsNotCountedOnGpuWorkers) {
  // mpi_exec is a GPU op, so its gang goes to the GPU workers, but its command may well be a
  // CPU program: idle GPUs under it are no sign of a mistake.
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: g\nnodes:\n  - {id: gang, op: mpi_exec, ranks: 2, "
                         "params: {command: run}}\n"));
  s.RegisterWorker(Worker("a", 2, true), 0);
  ASSERT_EQ(s.PlaceGangs(0).size(), 1u);
  ASSERT_EQ(s.registry().Find("a")->gang_ranks, 2u);
  EXPECT_EQ(GpuTasksRunning(s, "a", *s.registry().Find("a")), 0u);
}

TEST(GpuIdleWatchTest, HeartbeatsOfAnIdleGpuWorkerShowInItsStatusAndTheCoordinatorWarnings) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", "name: j\nnodes:\n  - {id: infer, op: noop, params: {tasks: 1}, "
                         "resources: {gpus: 1}}\n"));
  s.RegisterWorker(Worker("g", 1, true), 0);
  s.RegisterWorker(Worker("c", 1, false), 0);
  const std::vector<wire::TaskSpec> sent = s.Assign("g");
  ASSERT_EQ(sent.size(), 1u);
  s.MarkStarted("g", Attempts(sent));
  for (int64_t t = 0; t <= 60'000; t += 1000) {
    OnGpuHeartbeat(s, "g", Beat("g", Busy({0}), sent), t);
    wire::Heartbeat cpu = Beat("c", {}, {});
    cpu.gpu_sampling = "no GPUs";
    OnGpuHeartbeat(s, "c", cpu, t);
  }

  wire::CoordinatorStats stats;
  s.FillPoolStats(stats);
  ASSERT_THAT(stats.warnings, ElementsAre(HasSubstr("worker g holds 1 GPU task(s)")));
  const std::vector<wire::WorkerStatus> workers = s.Workers(60'000);
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(workers[0].id, "c");
  EXPECT_THAT(workers[0].gpu_usage, IsEmpty());
  EXPECT_EQ(workers[0].gpu_sampling, "no GPUs");
  EXPECT_EQ(workers[0].warning, "");
  EXPECT_EQ(workers[1].gpu_usage, Busy({0}));
  EXPECT_EQ(workers[1].gpu_sampling, "nvml");
  EXPECT_EQ(workers[1].warning, stats.warnings[0]);
  const std::vector<GpuIdleState> states = GpuIdleStates(s.registry());
  ASSERT_EQ(states.size(), 2u);
  EXPECT_FALSE(states[0].idle_warning);
  EXPECT_TRUE(states[1].idle_warning);
  EXPECT_EQ(states[1].gpu_tasks, 1u);

  OnGpuHeartbeat(s, "g", Beat("g", Busy({93}), sent), 61'000);
  wire::CoordinatorStats after;
  s.FillPoolStats(after);
  EXPECT_THAT(after.warnings, IsEmpty());
  EXPECT_EQ(s.Workers(61'000)[1].warning, "");
}

}  // namespace
}  // namespace coupler::coordinator
