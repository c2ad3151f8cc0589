// Placement by labels in the scheduler: a node's `requires` admits only workers advertising
// every pair, for loose tasks and gangs alike; until one joins, the node waits with a reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "coordinator/scheduler.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using testing::MakeJob;

wire::RegisterWorker Worker(const std::string& id, uint32_t slots, Labels labels) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.host = "host-" + id;
  w.slots = slots;
  w.prefetch = 0;
  w.labels = std::move(labels);
  return w;
}

const wire::NodeStatus& Node(const wire::JobStatus& s, const std::string& id) {
  auto it = std::find_if(s.nodes.begin(), s.nodes.end(), [&](const auto& n) { return n.id == id; });
  EXPECT_NE(it, s.nodes.end()) << id;
  return *it;
}

std::vector<std::string> NodesOf(const std::vector<wire::TaskSpec>& specs) {
  std::vector<std::string> out;
  for (const auto& s : specs) out.push_back(s.node_id);
  return out;
}

TEST(LabelSchedulerTest, LooseTasksWaitForAMatchingWorkerWithAReason) {
  Scheduler s(5000);
  s.AddJob(MakeJob("j1", R"(name: j
nodes:
  - {id: pinned, op: noop, params: {tasks: 2}, requires: {zone: b}}
  - {id: free, op: noop, params: {tasks: 1}}
)"));
  s.RegisterWorker(Worker("a", 4, {{"zone", "a"}}), 0);
  s.RegisterWorker(Worker("a2", 4, {}), 0);
  EXPECT_THAT(NodesOf(s.Assign("a")), ElementsAre("free"));
  EXPECT_THAT(s.Assign("a2"), IsEmpty());
  wire::JobStatus st = s.Status(*s.FindJob("j1"));
  EXPECT_EQ(st.state, job::JobPhase::kRunning);
  EXPECT_EQ(Node(st, "pinned").state, job::NodePhase::kReady);
  EXPECT_EQ(Node(st, "pinned").reason,
            "waiting for a worker with zone=b (2 alive workers, none match)");
  EXPECT_EQ(Node(st, "free").reason, "");

  s.RegisterWorker(Worker("b", 4, {{"zone", "b"}, {"gpu", "h200"}}), 0);
  EXPECT_THAT(NodesOf(s.Assign("b")), ElementsAre("pinned", "pinned"));
  EXPECT_EQ(Node(s.Status(*s.FindJob("j1")), "pinned").reason, "");
}

TEST(LabelSchedulerTest, AJobWaitingForLabelsDoesNotHoldBackLowerPriorityWork) {
  Scheduler s(5000);
  s.AddJob(MakeJob("hi", "name: hi\npriority: 5\nnodes:\n"
                         "  - {id: p, op: noop, params: {tasks: 1}, requires: {zone: b}}\n"));
  s.AddJob(MakeJob("lo", "name: lo\nnodes:\n  - {id: q, op: noop, params: {tasks: 1}}\n"));
  s.RegisterWorker(Worker("a", 2, {{"zone", "a"}}), 0);
  EXPECT_THAT(NodesOf(s.Assign("a")), ElementsAre("q"));
}

TEST(LabelSchedulerTest, GangsReserveOnlyMatchingWorkers) {
  Scheduler s(5000, 30'000);
  s.AddJob(MakeJob("j1", R"(name: g
nodes:
  - {id: gang, op: mpi_exec, ranks: 2, params: {command: run}, requires: {interconnect: infiniband}}
)"));
  s.RegisterWorker(Worker("a", 4, {{"interconnect", "nvlink"}}), 0);
  s.RegisterWorker(Worker("b", 1, {{"interconnect", "infiniband"}}), 0);
  EXPECT_THAT(s.PlaceGangs(0), IsEmpty());
  EXPECT_EQ(s.registry().Find("a")->held, 0u);  // a non-matching worker is never held
  EXPECT_EQ(Node(s.Status(*s.FindJob("j1")), "gang").reason,
            "cannot be placed yet: needs 2 ranks, the 1 alive matching worker have 1 slots in all");

  s.RemoveWorker("b", 0);
  s.PlaceGangs(1);
  EXPECT_EQ(Node(s.Status(*s.FindJob("j1")), "gang").reason,
            "waiting for a worker with interconnect=infiniband (1 alive worker, none match)");

  s.RegisterWorker(Worker("c", 2, {{"interconnect", "infiniband"}, {"zone", "a"}}), 2);
  auto placed = s.PlaceGangs(2);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].first, "c");
  EXPECT_THAT(placed[0].second.gang_ranks, ElementsAre(2u));
}

TEST(LabelSchedulerTest, PoolStatsCountReadyWorkByHardware) {
  Scheduler s(5000, 30'000);
  s.AddJob(MakeJob("j1", R"(name: p
nodes:
  - {id: cpu, op: noop, params: {tasks: 3}}
  - {id: gpu, op: noop, params: {tasks: 2}, resources: {gpus: 1}, requires: {zone: b}}
  - {id: gang, op: mpi_exec, ranks: 4, params: {command: run}}
)"));
  wire::CoordinatorStats st;
  s.FillPoolStats(st);
  EXPECT_EQ(st.queued_cpu_tasks, 3u);
  EXPECT_EQ(st.queued_gpu_tasks, 2u);
  EXPECT_EQ(st.queued_gang_ranks, 4u);
  EXPECT_EQ(st.recommended_workers, 9u);  // no worker alive: one slot each

  s.RegisterWorker(Worker("a", 4, {}), 0);
  s.PlaceGangs(0);  // the gang takes all 4 slots of a
  s.FillPoolStats(st);
  EXPECT_EQ(st.queued_gang_ranks, 0u);
  EXPECT_EQ(st.queued_cpu_tasks, 3u);
  EXPECT_EQ(st.recommended_workers, 3u);  // 4 in use + 5 queued, 4 slots per worker
}

}  // namespace
}  // namespace coupler::coordinator
