// Gangs of tight nodes in the scheduler: all ranks at once, packed, held against loose work,
// given back after the hold timeout, never placed where they cannot fit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>

#include "coordinator/scheduler.h"
#include "tests/unit/scheduler_test_util.h"
#include "worker/ops/gang_launch.h"

namespace coupler::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

constexpr int64_t kHoldTimeoutMs = 30'000;

using testing::MakeJob;

wire::RegisterWorker Worker(const std::string& id, uint32_t slots, uint32_t prefetch = 0,
                            bool gpu = false) {
  wire::RegisterWorker w;
  w.worker_id = id;
  w.host = "node";  // one hostname for all: hosts are told apart by address
  w.address = "host-" + id;
  w.slots = slots;
  w.prefetch = prefetch;
  if (gpu) w.gpus = {wire::GpuInfo{0, "gpu", 1ull << 30, 1ull << 30, ""}};
  return w;
}

wire::TaskOutcome Outcome(const wire::TaskSpec& s, bool ok) {
  return testing::OutcomeOf(s, ok, ok ? "" : "boom");
}

// One gang of `ranks` (mpi_exec) and `loose` noop tasks, independent of each other.
std::string GangJob(int ranks, int loose, bool gpus = false) {
  std::string yaml = "name: g\nnodes:\n  - {id: gang, op: mpi_exec, ranks: " +
                     std::to_string(ranks) + (gpus ? ", resources: {gpus: 1}" : "") +
                     ", params: {command: run}}\n";
  if (loose > 0) yaml += "  - {id: work, op: noop, params: {tasks: " + std::to_string(loose) + "}}\n";
  return yaml;
}

const wire::NodeStatus& Node(const wire::JobStatus& s, const std::string& id) {
  auto it = std::find_if(s.nodes.begin(), s.nodes.end(), [&](const auto& n) { return n.id == id; });
  EXPECT_NE(it, s.nodes.end()) << id;
  return *it;
}

TEST(GangSchedulerTest, StartsAllRanksAtOnceOnTheLeaderWithTheReservedHosts) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.AddJob(MakeJob("j1", GangJob(3, 0)));
  s.RegisterWorker(Worker("a", 2), 0);
  s.RegisterWorker(Worker("b", 2), 0);
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  const auto& [leader, spec] = placed[0];
  EXPECT_EQ(leader, "a");
  EXPECT_EQ(spec.op, "mpi_exec");
  EXPECT_THAT(spec.gang_hosts, ElementsAre("host-a", "host-b"));
  EXPECT_THAT(spec.gang_ranks, ElementsAre(2u, 1u));
  EXPECT_EQ(spec.kind, wire::TaskKind::kGang);
  EXPECT_EQ(spec.ranks, 3u);
  EXPECT_THAT(spec.output_path, HasSubstr("/gang"));
  // Every reserved slot is taken: a (2 of 2) and b (1 of 2) only have what is left.
  EXPECT_EQ(s.registry().Find("a")->credit(), 0u);
  EXPECT_EQ(s.registry().Find("b")->credit(), 1u);
  EXPECT_TRUE(s.PlaceGangs(1).empty());  // started once

  // The outcome frees every rank's slot, on the leader and on the other worker.
  EXPECT_EQ(s.OnOutcome("a", Outcome(spec, true)), OutcomeKind::kCommitted);
  EXPECT_EQ(s.registry().Find("a")->credit(), 2u);
  EXPECT_EQ(s.registry().Find("b")->credit(), 2u);
  EXPECT_EQ(s.FindJob("j1")->phase(), JobPhase::kSucceeded);
}

// The gang reads whole datasets and writes its node directory; evaluate reads that directory.
TEST(GangSchedulerTest, TrainReadsDirectoriesAndEvaluateReadsTheTrainDirectory) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("a", 2), 0);
  s.AddJob(MakeJob("j1", R"(name: t
workdir: /w
nodes:
  - {id: import, op: import_csv, inputs: [/data/digits.csv], params: {shards: 2}}
  - {id: train, op: train, inputs: [import], ranks: 2, params: {config: /cfg/train.yaml, epochs: 3}}
  - {id: eval, op: evaluate, inputs: [import, train]}
)"));
  for (const auto& t : s.Assign("a")) EXPECT_EQ(s.OnOutcome("a", Outcome(t, true)), OutcomeKind::kCommitted);
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  const wire::TaskSpec& train = placed[0].second;
  EXPECT_EQ(train.op, "train");
  EXPECT_THAT(train.input_paths, ElementsAre("/w/import"));
  EXPECT_EQ(train.output_path, "/w/train");
  EXPECT_EQ(train.params.Get<std::string>("config").value(), "/cfg/train.yaml");
  EXPECT_EQ(train.params.Get<int64_t>("epochs").value(), 3);
  EXPECT_THAT(train.gang_ranks, ElementsAre(2u));
  EXPECT_TRUE(s.Assign("a").empty());  // both slots run the gang
  s.OnOutcome("a", Outcome(train, true));
  auto evals = s.Assign("a");
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_THAT(evals[1].input_paths, ElementsAre("/w/import/part-00001.npz", "/w/train"));
  EXPECT_EQ(evals[1].output_path, "/w/eval/partial-00001.npz");
}

TEST(GangSchedulerTest, PacksRanksOntoTheFewestWorkers) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("a", 1), 0);
  s.RegisterWorker(Worker("b", 1), 0);
  s.RegisterWorker(Worker("c", 4), 0);
  s.AddJob(MakeJob("j1", GangJob(3, 0)));
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].first, "c");
  EXPECT_THAT(placed[0].second.gang_hosts, ElementsAre("host-c"));
  EXPECT_THAT(placed[0].second.gang_ranks, ElementsAre(3u));
  EXPECT_EQ(s.registry().Find("a")->credit(), 1u);
}

TEST(GangSchedulerTest, WaitsAndHoldsSlotsFreedByLooseTasksUntilItHasThemAll) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("a", 1, 1), 0);
  s.RegisterWorker(Worker("b", 1, 1), 0);
  // Loose work arrives first and fills both workers (slots + prefetch).
  s.AddJob(MakeJob("loose", "name: l\nnodes:\n  - {id: work, op: noop, params: {tasks: 50}}\n"));
  auto on_a = s.Assign("a");
  auto on_b = s.Assign("b");
  ASSERT_EQ(on_a.size(), 2u);
  ASSERT_EQ(on_b.size(), 2u);
  s.AddJob(MakeJob("gang", GangJob(2, 0)));
  EXPECT_TRUE(s.PlaceGangs(0).empty());
  EXPECT_THAT(Node(s.Status(*s.FindJob("gang")), "gang").reason,
              HasSubstr("waiting for 2 more free slots (holding 0 of 2)"));

  // a finishes both of its tasks: its slot is held for the gang, not refilled with loose work.
  for (const auto& t : on_a) s.OnOutcome("a", Outcome(t, true));
  EXPECT_TRUE(s.PlaceGangs(10).empty());
  EXPECT_TRUE(s.Assign("a").empty());
  EXPECT_EQ(s.registry().Find("a")->held, 1u);
  const wire::JobStatus waiting = s.Status(*s.FindJob("gang"));
  EXPECT_EQ(Node(waiting, "gang").state, job::NodePhase::kReady);
  EXPECT_EQ(Node(waiting, "gang").ranks, 2u);
  EXPECT_THAT(Node(waiting, "gang").reason, HasSubstr("waiting for 1 more free slot (holding 1 of 2)"));

  // b drains one task: its prefetched one still occupies the slot, so the gang keeps waiting.
  s.OnOutcome("b", Outcome(on_b[0], true));
  EXPECT_TRUE(s.PlaceGangs(20).empty());
  EXPECT_TRUE(s.Assign("b").empty());
  s.OnOutcome("b", Outcome(on_b[1], true));
  auto placed = s.PlaceGangs(30);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_THAT(placed[0].second.gang_ranks, ElementsAre(1u, 1u));
  EXPECT_EQ(s.longest_partial_hold_ms(), 20);  // a's slot, held from 10 to 30
  EXPECT_EQ(s.registry().Find("a")->held, 0u);
  EXPECT_EQ(s.registry().Find("a")->gang_ranks, 1u);
  EXPECT_TRUE(s.Assign("a").empty());
  EXPECT_TRUE(s.Assign("b").empty());
}

TEST(GangSchedulerTest, GivesBackAPartialHoldAfterTheTimeout) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("a", 1), 0);
  s.RegisterWorker(Worker("b", 1), 0);
  s.AddJob(MakeJob("loose", "name: l\nnodes:\n  - {id: work, op: noop, params: {tasks: 5}}\n"));
  auto on_b = s.Assign("b");  // b is busy for a long time
  ASSERT_EQ(on_b.size(), 1u);
  s.AddJob(MakeJob("gang", GangJob(2, 0)));
  EXPECT_TRUE(s.PlaceGangs(1'000).empty());
  EXPECT_EQ(s.registry().Find("a")->held, 1u);
  EXPECT_TRUE(s.Assign("a").empty());

  EXPECT_TRUE(s.PlaceGangs(1'000 + kHoldTimeoutMs - 1).empty());
  EXPECT_EQ(s.registry().Find("a")->held, 1u);
  EXPECT_EQ(s.longest_partial_hold_ms(), 0) << "a hold still running is not counted yet";
  EXPECT_TRUE(s.PlaceGangs(1'000 + kHoldTimeoutMs).empty());
  EXPECT_EQ(s.registry().Find("a")->held, 0u);  // given back: loose work may use it
  EXPECT_EQ(s.longest_partial_hold_ms(), kHoldTimeoutMs);
  EXPECT_THAT(Node(s.Status(*s.FindJob("gang")), "gang").reason,
              HasSubstr("gave back a partial hold of 1 of 2 slots after 30 s"));
  EXPECT_EQ(s.Assign("a").size(), 1u);
  EXPECT_EQ(s.FindJob("gang")->phase(), JobPhase::kQueued);
}

TEST(GangSchedulerTest, AGangThatCannotFitStaysQueuedWithAReason) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("a", 2), 0);
  s.AddJob(MakeJob("j1", GangJob(4, 3)));
  EXPECT_TRUE(s.PlaceGangs(0).empty());
  EXPECT_EQ(s.registry().Find("a")->held, 0u);  // holds nothing it could never use
  EXPECT_EQ(s.Assign("a").size(), 2u);          // loose work still runs
  const wire::JobStatus st = s.Status(*s.FindJob("j1"));
  EXPECT_EQ(st.state, job::JobPhase::kRunning);
  EXPECT_EQ(Node(st, "gang").state, job::NodePhase::kReady);
  EXPECT_THAT(Node(st, "gang").reason,
              HasSubstr("cannot be placed yet: needs 4 ranks, the 1 alive worker have 2 slots"));

  // A bigger worker joins: now it fits.
  s.RegisterWorker(Worker("big", 4), 1);
  auto placed = s.PlaceGangs(2);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].first, "big");
}

TEST(GangSchedulerTest, GpuGangsGoToGpuWorkersWhenThereAreAny) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("cpu", 4), 0);
  s.AddJob(MakeJob("j1", GangJob(2, 0, /*gpus=*/true)));
  s.RegisterWorker(Worker("gpu", 2, 0, /*gpu=*/true), 0);
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].first, "gpu");

  // On a CPU-only pool the same gang trains on CPUs rather than wait forever.
  Scheduler cpu_only(5000, kHoldTimeoutMs);
  cpu_only.RegisterWorker(Worker("cpu", 4), 0);
  cpu_only.AddJob(MakeJob("j1", GangJob(2, 0, /*gpus=*/true)));
  auto on_cpu = cpu_only.PlaceGangs(0);
  ASSERT_EQ(on_cpu.size(), 1u);
  EXPECT_EQ(on_cpu[0].first, "cpu");
}

// train and mpi_exec are GPU ops: their gangs go to GPU workers without `resources.gpus`.
TEST(GangSchedulerTest, AGangOfAGpuOpPrefersGpuWorkersWithoutAsking) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("cpu", 4), 0);
  s.RegisterWorker(Worker("gpu", 2, 0, /*gpu=*/true), 0);
  s.AddJob(MakeJob("j1", GangJob(2, 0)));
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].first, "gpu");
}

// Hosts are addresses: two workers on one address are one host and are filled together before
// a host of one larger worker; two with one hostname on different addresses are two hosts.
TEST(GangSchedulerTest, WorkersOnOneAddressAreOneHostAndPackingPrefersIt) {
  Scheduler s(5000, kHoldTimeoutMs);
  auto at = [](const std::string& id, uint32_t slots, const std::string& address) {
    wire::RegisterWorker w = Worker(id, slots);
    w.address = address;
    return w;
  };
  s.RegisterWorker(at("big", 3, "10.0.0.1"), 0);
  s.RegisterWorker(at("x1", 2, "10.0.0.2"), 0);
  s.RegisterWorker(at("x2", 2, "10.0.0.2"), 0);
  s.AddJob(MakeJob("j1", GangJob(4, 0)));
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  // 10.0.0.2 holds 4 ranks on its two workers: the whole gang stays on one host.
  EXPECT_THAT(placed[0].second.gang_hosts, ElementsAre("10.0.0.2", "10.0.0.2"));
  EXPECT_THAT(placed[0].second.gang_ranks, ElementsAre(2u, 2u));
  EXPECT_TRUE(worker::GangIsLocal(placed[0].second));
  EXPECT_EQ(worker::GangHostfileText(placed[0].second, 4), "localhost slots=4\n");
  EXPECT_EQ(s.registry().Find("big")->gang_ranks, 0u);
}

TEST(GangSchedulerTest, OneHostnameOnTwoAddressesIsTwoHosts) {
  Scheduler s(5000, kHoldTimeoutMs);
  wire::RegisterWorker a = Worker("a", 1);
  wire::RegisterWorker b = Worker("b", 1);
  a.address = "10.0.0.1";
  b.address = "10.0.0.2";
  ASSERT_EQ(a.host, b.host);
  s.RegisterWorker(a, 0);
  s.RegisterWorker(b, 0);
  s.AddJob(MakeJob("j1", GangJob(2, 0)));
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_THAT(placed[0].second.gang_hosts, ElementsAre("10.0.0.1", "10.0.0.2"));
  EXPECT_FALSE(worker::GangIsLocal(placed[0].second));
  EXPECT_EQ(worker::GangHostfileText(placed[0].second, 2), "10.0.0.1 slots=1\n10.0.0.2 slots=1\n");
  EXPECT_EQ(worker::GangHostList(placed[0].second, 2), "10.0.0.1:1,10.0.0.2:1");
  // status shows where the group runs
  EXPECT_THAT(Node(s.Status(*s.FindJob("j1")), "gang").hosts, ElementsAre("10.0.0.1", "10.0.0.2"));
}

// Two Slurm jobs sharing a node (array tasks of 1 CPU each) are not one 2-CPU host: a gang's
// ranks there would all start in one job's allocation. A worker takes at most the CPUs its job
// has on the node (slurm_cpus), whatever --slots offers loose tasks.
TEST(GangSchedulerTest, UnderSlurmAGangRunsInOneJobPerNodeAndWithinItsCpus) {
  auto in_job = [](const std::string& id, uint32_t slots, const std::string& address,
                   const std::string& job, const std::string& cpus) {
    wire::RegisterWorker w = Worker(id, slots);
    w.address = address;
    w.labels = {{"slurm_job", job}, {"slurm_node", "n1"}, {"slurm_cpus", cpus}};
    return w;
  };
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(in_job("a1", 1, "10.0.0.5", "101", "1"), 0);
  s.RegisterWorker(in_job("a2", 1, "10.0.0.5", "102", "1"), 0);
  s.AddJob(MakeJob("j1", GangJob(2, 0)));
  EXPECT_TRUE(s.PlaceGangs(0).empty());
  EXPECT_THAT(Node(s.Status(*s.FindJob("j1")), "gang").reason,
              HasSubstr("needs 2 ranks, the 1 alive worker have 1 slots in all (1 worker more on "
                        "nodes shared by several Slurm jobs"));
  EXPECT_EQ(s.registry().Find("a1")->held + s.registry().Find("a2")->held, 0u);

  // A worker that offers 4 slots in a job of 1 CPU still takes one rank.
  s.RegisterWorker(in_job("b", 4, "10.0.0.6", "103", "1"), 0);
  auto placed = s.PlaceGangs(1);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_THAT(placed[0].second.gang_hosts, ElementsAre("10.0.0.5", "10.0.0.6"));
  EXPECT_THAT(placed[0].second.gang_ranks, ElementsAre(1u, 1u));
}

// Among workers with equal room, a gang spanning hosts takes those with a fast interconnect.
TEST(GangSchedulerTest, AGangAcrossHostsPrefersAFastInterconnect) {
  Scheduler s(5000, kHoldTimeoutMs);
  auto labelled = [](const std::string& id, const std::string& link) {
    wire::RegisterWorker w = Worker(id, 1);
    w.labels = {{"interconnect", link}};
    return w;
  };
  s.RegisterWorker(labelled("a-eth", "ethernet"), 0);
  s.RegisterWorker(labelled("b-ib", "infiniband"), 0);
  s.RegisterWorker(Worker("c-none", 1), 0);
  s.RegisterWorker(labelled("d-nvl", "nvlink"), 0);
  s.AddJob(MakeJob("j1", GangJob(2, 0)));
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_THAT(placed[0].second.gang_hosts, ElementsAre("host-b-ib", "host-d-nvl"));
}

TEST(GangSchedulerTest, LosingTheLeaderRequeuesTheGangAndFreesTheOtherSlots) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("a", 1), 0);
  s.RegisterWorker(Worker("b", 1), 0);
  s.AddJob(MakeJob("j1", "name: g\nnodes:\n  - {id: gang, op: mpi_exec, ranks: 2, retries: 1, "
                         "params: {command: run}}\n"));
  auto first = s.PlaceGangs(0);
  ASSERT_EQ(first.size(), 1u);
  const std::string leader = first[0].first;
  const std::string other = leader == "a" ? "b" : "a";
  auto lost = s.RemoveWorker(leader, 0);
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_EQ(lost[0].task_id, first[0].second.task_id);
  EXPECT_EQ(s.registry().Find(other)->gang_ranks, 0u);
  // The old attempt's late failure must not count against the new one.
  s.RegisterWorker(Worker(leader, 1), 1);
  auto second = s.PlaceGangs(2);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].second.attempt, 1u);
  EXPECT_EQ(s.OnOutcome(leader, Outcome(first[0].second, false)), OutcomeKind::kStale);
  EXPECT_EQ(s.OnOutcome(second[0].first, Outcome(second[0].second, true)),
            OutcomeKind::kCommitted);
  EXPECT_EQ(s.FindJob("j1")->phase(), JobPhase::kSucceeded);
}

// A worker that only lent slots leaves: the leader's group goes on; its outcome decides.
TEST(GangSchedulerTest, LosingAWorkerThatOnlyLentSlotsLeavesTheGangRunning) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("a", 1), 0);
  s.RegisterWorker(Worker("b", 1), 0);
  s.AddJob(MakeJob("j1", GangJob(2, 0)));
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  const std::string other = placed[0].first == "a" ? "b" : "a";
  EXPECT_TRUE(s.RemoveWorker(other, 0).empty());
  EXPECT_EQ(s.OnOutcome(placed[0].first, Outcome(placed[0].second, true)),
            OutcomeKind::kCommitted);
  EXPECT_EQ(s.registry().Find(placed[0].first)->gang_ranks, 0u);
  EXPECT_EQ(s.FindJob("j1")->phase(), JobPhase::kSucceeded);
}

// Two gangs of 2 and a stream of loose tasks on 3 workers x 1 slot: the loop the coordinator
// runs (place gangs, assign loose work, report outcomes), simulated until everything is done.
TEST(GangSchedulerTest, TwoGangsAndLooseWorkOnThreeSingleSlotWorkersAllFinish) {
  Scheduler s(5000, kHoldTimeoutMs);
  for (const char* id : {"w1", "w2", "w3"}) s.RegisterWorker(Worker(id, 1, 1), 0);
  s.AddJob(MakeJob("loose", "name: l\nnodes:\n  - {id: work, op: noop, params: {tasks: 40}}\n"));
  s.AddJob(MakeJob("g1", GangJob(2, 5)));
  s.AddJob(MakeJob("g2", GangJob(2, 5)));

  // In flight per worker, oldest first; each tick every worker finishes its oldest task.
  std::map<std::string, std::deque<wire::TaskSpec>> running;
  int gangs_started = 0;
  int64_t now = 0;
  for (int tick = 0; tick < 500; ++tick, now += 100) {
    for (auto& [leader, spec] : s.PlaceGangs(now)) {
      EXPECT_EQ(std::accumulate(spec.gang_ranks.begin(), spec.gang_ranks.end(), 0u), 2u);
      ++gangs_started;
      running[leader].push_back(spec);
    }
    for (const char* id : {"w1", "w2", "w3"}) {
      for (auto& t : s.Assign(id)) running[id].push_back(t);
    }
    for (auto& [id, queue] : running) {
      if (queue.empty()) continue;
      EXPECT_NE(s.OnOutcome(id, Outcome(queue.front(), true)), OutcomeKind::kDropped);
      queue.pop_front();
    }
    if (std::all_of(s.jobs().begin(), s.jobs().end(), [](const auto& j) { return j->finished(); })) {
      break;
    }
  }
  for (const auto& j : s.jobs()) EXPECT_EQ(j->phase(), JobPhase::kSucceeded) << j->id();
  EXPECT_EQ(gangs_started, 2);
  for (const char* id : {"w1", "w2", "w3"}) {
    const WorkerEntry& w = *s.registry().Find(id);
    EXPECT_EQ(w.held, 0u) << id;
    EXPECT_EQ(w.gang_ranks, 0u) << id;
    EXPECT_THAT(w.inflight, IsEmpty()) << id;
  }
}

TEST(GangSchedulerTest, CancelTellsTheLeaderAndFreesTheGangsSlots) {
  Scheduler s(5000, kHoldTimeoutMs);
  s.RegisterWorker(Worker("a", 1), 0);
  s.RegisterWorker(Worker("b", 1), 0);
  s.AddJob(MakeJob("j1", GangJob(2, 0)));
  auto placed = s.PlaceGangs(0);
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_THAT(s.Cancel("j1"), ElementsAre(placed[0].first));
  EXPECT_EQ(s.registry().Find("a")->credit(), 1u);
  EXPECT_EQ(s.registry().Find("b")->credit(), 1u);
}

}  // namespace
}  // namespace coupler::coordinator
