// Where `coupler plan --workers` says each node would run: the scheduler's rules (labels, GPUs,
// GPU shares, gang packing) applied to the pool a coordinator reports, and every reason a node
// cannot be placed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/placement/pool_fit.h"
#include "runtime/plan/planner.h"
#include "tests/unit/spec_test_util.h"

namespace coupler::coordinator {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

constexpr uint64_t kGiB = uint64_t{1} << 30;

wire::WorkerStatus Worker(const std::string& id, uint32_t slots, Labels labels = {},
                          uint64_t gpu_bytes = 0, const std::string& state = "alive") {
  wire::WorkerStatus w;
  w.id = id;
  w.host = "host-" + id;
  w.slots = slots;
  w.state = *pool::ParseWorkerState(state);
  w.labels = std::move(labels);
  if (gpu_bytes > 0) w.gpus = {wire::GpuInfo{0, "NVIDIA H100", gpu_bytes, gpu_bytes, ""}};
  return w;
}

NodeDemand Loose(const std::string& id, Labels required = {}) {
  NodeDemand d;
  d.id = id;
  d.required = std::move(required);
  return d;
}

NodeDemand Tight(const std::string& id, uint32_t ranks, bool wants_gpus = false) {
  NodeDemand d;
  d.id = id;
  d.tight = true;
  d.ranks = ranks;
  d.wants_gpus = wants_gpus;
  return d;
}

TEST(PoolFitTest, LooseNodeRunsOnEveryAliveMatchingWorker) {
  const std::vector<wire::WorkerStatus> pool = {
      Worker("w1", 2, {{"zone", "a"}}), Worker("w2", 1, {{"zone", "a"}}),
      Worker("w3", 4, {{"zone", "b"}}), Worker("w4", 8, {{"zone", "a"}}, 0, "draining")};
  const NodeFit fit = FitNode(Loose("prep", {{"zone", "a"}}), pool);
  ASSERT_TRUE(fit.placeable) << fit.reason;
  EXPECT_THAT(fit.workers, ElementsAre(Pair("w1", 2u), Pair("w2", 1u)));
  EXPECT_EQ(fit.slots, 3u);
  EXPECT_EQ(DescribeFit(fit), "w1, w2 (3 slots)");
  EXPECT_EQ(DescribeFit(FitNode(Loose("any"), pool)), "w1, w2, w3 (7 slots)");
}

TEST(PoolFitTest, TightNodePacksOntoTheFewestWorkers) {
  const std::vector<wire::WorkerStatus> pool = {Worker("w1", 1), Worker("w2", 2), Worker("w3", 1)};
  EXPECT_EQ(DescribeFit(FitNode(Tight("train", 2), pool)), "w2 x2");
  const NodeFit spread = FitNode(Tight("train", 3), pool);
  ASSERT_TRUE(spread.placeable) << spread.reason;
  EXPECT_THAT(spread.workers, ElementsAre(Pair("w2", 2u), Pair("w1", 1u)));
  EXPECT_EQ(DescribeFit(spread), "w2 x2, w1 x1");
}

TEST(PoolFitTest, TightNodeWithMoreRanksThanMatchingSlotsCannotBePlaced) {
  const std::vector<wire::WorkerStatus> pool = {Worker("w1", 2), Worker("w2", 1)};
  const NodeFit fit = FitNode(Tight("train", 4), pool);
  EXPECT_FALSE(fit.placeable);
  EXPECT_EQ(DescribeFit(fit),
            "cannot place: needs 4 ranks; matching workers have 3 slots in all (w1: 2, w2: 1)");
}

// As the scheduler places gangs: within a Slurm job's CPUs on a node, one job per node.
TEST(PoolFitTest, TightNodeUnderSlurmUsesOneJobPerNodeAndItsCpus) {
  auto in_job = [](const std::string& id, uint32_t slots, const std::string& address,
                   const std::string& job, const std::string& cpus) {
    wire::WorkerStatus w = Worker(id, slots, {{"slurm_job", job}, {"slurm_cpus", cpus}});
    w.address = address;
    return w;
  };
  const std::vector<wire::WorkerStatus> shared = {in_job("a1", 1, "10.0.0.5", "101", "1"),
                                                  in_job("a2", 1, "10.0.0.5", "102", "1")};
  EXPECT_EQ(DescribeFit(FitNode(Tight("train", 2), shared)),
            "cannot place: needs 2 ranks; matching workers have 1 slot in all (a1: 1); not "
            "a2: on a node shared by several Slurm jobs a gang runs in one of them");
  // More slots than CPUs: loose tasks may overcommit, a gang may not.
  EXPECT_EQ(DescribeFit(FitNode(Tight("train", 3), {in_job("big", 8, "10.0.0.6", "7", "2")})),
            "cannot place: needs 3 ranks; matching workers have 2 slots in all (big: 2)");
  EXPECT_EQ(DescribeFit(FitNode(Tight("train", 2), {in_job("big", 8, "10.0.0.6", "7", "2")})),
            "big x2");
}

TEST(PoolFitTest, TightGpuNodeUsesOnlyGpuWorkersWhenThereAreAny) {
  const std::vector<wire::WorkerStatus> pool = {Worker("cpu", 8), Worker("g1", 2, {}, 80 * kGiB)};
  EXPECT_EQ(DescribeFit(FitNode(Tight("train", 2, true), pool)), "g1 x2");
  EXPECT_EQ(DescribeFit(FitNode(Tight("train", 3, true), pool)),
            "cannot place: needs 3 ranks; matching GPU workers have 2 slots in all (g1: 2)");
}

TEST(PoolFitTest, TightGpuNodeOnACpuOnlyPoolRunsOnCpusAndSaysSo) {
  const NodeFit fit = FitNode(Tight("train", 2, true), {Worker("w1", 2)});
  ASSERT_TRUE(fit.placeable) << fit.reason;
  EXPECT_EQ(DescribeFit(fit), "w1 x2; no matching worker has a GPU: the ranks run on CPUs");
}

TEST(PoolFitTest, LooseGpuNodeNeedsAGpuWorker) {
  NodeDemand infer = Loose("infer");
  infer.wants_gpus = true;
  const std::vector<wire::WorkerStatus> cpus = {Worker("w1", 2), Worker("w2", 2)};
  EXPECT_EQ(DescribeFit(FitNode(infer, cpus)),
            "cannot place: needs a GPU worker; 2 alive workers, none has a GPU");
  infer.required = {{"zone", "a"}};
  EXPECT_EQ(DescribeFit(FitNode(infer, {Worker("w1", 2, {{"zone", "a"}}), Worker("g", 1, {}, kGiB)})),
            "cannot place: needs a GPU worker with zone=a; 1 alive worker matches, none has a GPU");
  EXPECT_EQ(DescribeFit(FitNode(infer, {Worker("w1", 2, {{"zone", "a"}}),
                                        Worker("g", 1, {{"zone", "a"}}, kGiB)})),
            "g (1 slot)");
}

TEST(PoolFitTest, NodeRequiringLabelsNoWorkerHasCannotBePlaced) {
  const std::vector<wire::WorkerStatus> pool = {Worker("w1", 2, {{"zone", "a"}}),
                                                Worker("w2", 2, {{"zone", "a"}})};
  EXPECT_EQ(DescribeFit(FitNode(Loose("pinned", {{"zone", "b"}}), pool)),
            "cannot place: needs a worker with zone=b (2 alive workers, none match)");
  NodeDemand gang = Tight("train", 2);
  gang.required = {{"interconnect", "nvlink"}};
  EXPECT_EQ(DescribeFit(FitNode(gang, pool)),
            "cannot place: needs a worker with interconnect=nvlink (2 alive workers, none match)");
}

TEST(PoolFitTest, GpuShareLargerThanEveryGpuCannotBePlaced) {
  NodeDemand share = Loose("embed");
  share.gpu_memory_bytes = 90 * kGiB;
  const std::vector<wire::WorkerStatus> pool = {Worker("w1", 2, {}, 80 * kGiB),
                                                Worker("w2", 2, {}, 40 * kGiB), Worker("c", 4)};
  EXPECT_EQ(DescribeFit(FitNode(share, pool)),
            "cannot place: gpu_memory 90 GiB exceeds every GPU (largest 80 GiB on w1)");
  // Within the device's size but not within what shares may take of it.
  share.gpu_memory_bytes = 79 * kGiB;
  EXPECT_EQ(DescribeFit(FitNode(share, pool)),
            "cannot place: gpu_memory 79 GiB exceeds every GPU (largest 80 GiB on w1, 76 GiB of it "
            "for shares)");
  // A share that fits goes only to the GPUs that hold it, not to the CPU worker.
  share.gpu_memory_bytes = 50 * kGiB;
  EXPECT_EQ(DescribeFit(FitNode(share, pool)), "w1 (2 slots)");
}

TEST(PoolFitTest, GpuShareOnAPoolWithoutGpusRunsOnTheCpu) {
  NodeDemand share = Loose("embed");
  share.gpu_memory_bytes = 4 * kGiB;
  EXPECT_EQ(DescribeFit(FitNode(share, {Worker("w1", 2)})),
            "w1 (2 slots); no GPU in the pool: its tasks run on the CPU");
  // Labels narrow the workers, but the pool as a whole decides whether shares stay on GPUs.
  share.required = {{"zone", "a"}};
  EXPECT_EQ(DescribeFit(FitNode(share, {Worker("w1", 2, {{"zone", "a"}}), Worker("g", 1, {}, kGiB)})),
            "cannot place: needs a GPU worker with zone=a; 1 alive worker matches, none has a GPU");
}

TEST(PoolFitTest, NoAliveWorkersPlacesNothing) {
  EXPECT_EQ(DescribeFit(FitNode(Loose("prep"), {})), "cannot place: no alive workers");
  EXPECT_EQ(DescribeFit(FitNode(Tight("train", 2), {Worker("w1", 4, {}, 0, "draining"),
                                                   Worker("w2", 4, {}, 0, "lost")})),
            "cannot place: no alive workers (1 draining)");
}

TEST(PoolFitTest, DemandFollowsThePlan) {
  job::LoadedJob j = job::testing::Load(
      "name: d\n"
      "nodes:\n"
      "  - id: prep\n"
      "    op: noop\n"
      "    params: {tasks: 4}\n"
      "    requires: {zone: a}\n"
      "    resources: {gpu_memory: 4GiB}\n"
      "  - id: fit\n"
      "    op: mpi_exec\n"
      "    inputs: [prep]\n"
      "    ranks: 3\n"
      "    params: {command: 'mpirun -np {ranks} --hostfile {hostfile} true'}\n"
      "    resources: {gpus: 1}\n");
  ASSERT_TRUE(j.ok()) << j.diags.ToString();
  Result<plan::Plan> p = plan::PlanJob(*j.graph);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::vector<NodeDemand> demands;
  for (const auto& n : p->nodes) demands.push_back(DemandOf(n, j.graph->nodes[n.node_index]));
  ASSERT_EQ(demands.size(), 2u);
  EXPECT_FALSE(demands[0].tight);
  EXPECT_EQ(demands[0].ranks, 1u);
  EXPECT_FALSE(demands[0].wants_gpus);
  EXPECT_EQ(demands[0].gpu_memory_bytes, 4 * kGiB);
  EXPECT_EQ(demands[0].required, (Labels{{"zone", "a"}}));
  EXPECT_TRUE(demands[1].tight);
  EXPECT_EQ(demands[1].ranks, 3u);
  EXPECT_TRUE(demands[1].wants_gpus);

  const std::vector<NodeFit> fits =
      FitPool(demands, {Worker("w1", 2, {{"zone", "a"}}), Worker("w2", 2)});
  ASSERT_EQ(fits.size(), 2u);
  EXPECT_EQ(DescribeFit(fits[0]), "w1 (2 slots); no GPU in the pool: its tasks run on the CPU");
  EXPECT_EQ(DescribeFit(fits[1]),
            "w1 x2, w2 x1; no matching worker has a GPU: the ranks run on CPUs");
}

}  // namespace
}  // namespace coupler::coordinator
