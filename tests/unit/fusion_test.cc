// Fused per-shard chains: which nodes the planner fuses and which of their shards stay in
// memory, how the record keeps that, and how a chain's one task completes every node's shard.
#include "runtime/plan/fusion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/admitted_plan.h"
#include "coordinator/job_state.h"
#include "runtime/plan/plan_format.h"
#include "tests/unit/spec_test_util.h"

namespace coupler::plan {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Planned {
  job::JobGraph graph;
  Plan plan;
};

Planned MustPlan(const std::string& yaml, const std::set<size_t>& unfused = {}) {
  job::LoadedJob j = job::testing::Load(yaml);
  EXPECT_TRUE(j.ok()) << job::testing::Errors(j);
  if (!j.ok()) return {};
  Result<Plan> p = PlanJob(*j.graph);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  Planned out{std::move(*j.graph), p.ok() ? *p : Plan{}};
  FuseChains(out.graph, out.plan, unfused);
  return out;
}

const PlanNode& Node(const Plan& p, const std::string& id) {
  for (const auto& n : p.nodes) {
    if (n.id == id) return n;
  }
  ADD_FAILURE() << "no node " << id;
  static PlanNode none;
  return none;
}

size_t Index(const Plan& p, const std::string& id) {
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (p.nodes[i].id == id) return i;
  }
  ADD_FAILURE() << "no node " << id;
  return 0;
}

// import feeds both stats and standardize, so it fuses with neither; standardize reads the
// stats as a second input but is the chain's first node, so that is fine; exec ends the chain
// reading files, so select's shards are written for it.
constexpr const char* kPipeline = R"(name: p
nodes:
  - {id: import, op: import_csv, inputs: [/data/digits.csv], params: {shards: 4}}
  - {id: stats, op: column_stats, inputs: [import]}
  - {id: std, op: standardize, inputs: [import, stats]}
  - {id: keep, op: filter, inputs: [std], params: {where: "x > 0"}}
  - {id: more, op: derive, inputs: [keep], params: {columns: {z: "x * 2"}}}
  - {id: cols, op: select, inputs: [more], params: {keep: [z]}}
  - {id: run, op: exec, inputs: [cols], params: {command: "cp {input} {output}"}}
)";

TEST(FusionTest, ConsecutivePerShardNodesFuseAndOnlyWhatIsReadOutsideIsWritten) {
  const Planned p = MustPlan(kPipeline);
  EXPECT_THAT(FusedChains(p.plan), ElementsAre(ElementsAre("std", "keep", "more", "cols", "run")));
  EXPECT_EQ(Node(p.plan, "import").fused_after, "");
  EXPECT_EQ(Node(p.plan, "stats").fused_after, "");
  EXPECT_EQ(Node(p.plan, "std").fused_after, "");
  EXPECT_EQ(Node(p.plan, "keep").fused_after, "std");
  EXPECT_EQ(Node(p.plan, "run").fused_after, "cols");
  EXPECT_FALSE(Node(p.plan, "import").output_in_memory);  // two readers
  EXPECT_TRUE(Node(p.plan, "std").output_in_memory);
  EXPECT_TRUE(Node(p.plan, "keep").output_in_memory);
  EXPECT_TRUE(Node(p.plan, "more").output_in_memory);
  EXPECT_FALSE(Node(p.plan, "cols").output_in_memory);  // exec reads it from disk
  EXPECT_FALSE(Node(p.plan, "run").output_in_memory);   // the job's last node
  const std::string table = FormatPlanTable(p.plan);
  EXPECT_THAT(table, HasSubstr("std (memory) -> keep (memory) -> more (memory) -> cols -> run"));
  EXPECT_THAT(FormatPlanJson(p.plan),
              HasSubstr(R"("fused_chains":[["std","keep","more","cols","run"]])"));
}

TEST(FusionTest, KeepWritesANodesShardsAndASecondReaderOrAnotherPlacementEndsTheChain) {
  const Planned kept = MustPlan(R"(name: p
nodes:
  - {id: a, op: import_csv, inputs: [/data/digits.csv], params: {shards: 2}}
  - {id: b, op: filter, inputs: [a], keep: true, params: {where: "x > 0"}}
  - {id: c, op: derive, inputs: [b], params: {columns: {z: "x * 2"}}}
)");
  EXPECT_THAT(FusedChains(kept.plan), ElementsAre(ElementsAre("a", "b", "c")));
  EXPECT_TRUE(Node(kept.plan, "a").output_in_memory);
  EXPECT_FALSE(Node(kept.plan, "b").output_in_memory);

  const Planned split = MustPlan(R"(name: p
nodes:
  - {id: a, op: import_csv, inputs: [/data/digits.csv], params: {shards: 2}}
  - {id: b, op: filter, inputs: [a], params: {where: "x > 0"}}
  - {id: c, op: derive, inputs: [b], params: {columns: {z: "x * 2"}}}
  - {id: d, op: derive, inputs: [b], params: {columns: {w: "x * 3"}}}
  - {id: e, op: filter, inputs: [d], retries: 0, params: {where: "w > 1"}}
  - {id: f, op: select, inputs: [c], requires: {zone: a}, params: {keep: [z]}}
)");
  // b has two readers; e retries differently from d; f must run on labelled workers.
  EXPECT_THAT(FusedChains(split.plan), ElementsAre(ElementsAre("a", "b")));
  EXPECT_FALSE(Node(split.plan, "b").output_in_memory);

  const Planned reduce = MustPlan(R"(name: p
nodes:
  - {id: a, op: import_csv, inputs: [/data/digits.csv], params: {shards: 2}}
  - {id: s, op: column_stats, inputs: [a]}
  - {id: t, op: train, inputs: [a], params: {config: /cfg/train.yaml}}
)");
  EXPECT_THAT(FusedChains(reduce.plan), IsEmpty());
}

TEST(FusionTest, ANodeAnEarlierRunProvidesNeitherStartsNorJoinsAChain) {
  const std::string yaml = R"(name: p
nodes:
  - {id: a, op: import_csv, inputs: [/data/digits.csv], params: {shards: 2}}
  - {id: b, op: filter, inputs: [a], params: {where: "x > 0"}}
  - {id: c, op: derive, inputs: [b], params: {columns: {z: "x * 2"}}}
)";
  const Planned all = MustPlan(yaml);
  const Planned reused = MustPlan(yaml, {Index(all.plan, "a")});
  EXPECT_THAT(FusedChains(reused.plan), ElementsAre(ElementsAre("b", "c")));
  EXPECT_FALSE(Node(reused.plan, "a").output_in_memory);
}

TEST(FusionTest, TheRecordKeepsTheChainsAndAVersionOneRecordDecodesUnfused) {
  Planned p = MustPlan(kPipeline);
  p.graph.nodes[3].keep = true;
  coordinator::AdmittedPlan a;
  a.graph = p.graph;
  a.plan = p.plan;
  Result<coordinator::AdmittedPlan> back =
      coordinator::DecodeAdmittedPlan(coordinator::EncodeAdmittedPlan(a));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(FusedChains(back->plan), FusedChains(p.plan));
  for (size_t i = 0; i < p.plan.nodes.size(); ++i) {
    EXPECT_EQ(back->plan.nodes[i].output_in_memory, p.plan.nodes[i].output_in_memory) << i;
  }
  EXPECT_TRUE(back->graph.nodes[3].keep);

  // Version 1 had no fusion fields: the same bytes less those, under version 1.
  coordinator::AdmittedPlan unfused = a;
  for (PlanNode& n : unfused.plan.nodes) {
    n.fused_after.clear();
    n.output_in_memory = false;
  }
  for (job::NodeSpec& n : unfused.graph.nodes) n.keep = false;
  std::string v1 = coordinator::EncodeAdmittedPlan(unfused);
  const size_t nodes = unfused.plan.nodes.size(), graph_nodes = unfused.graph.nodes.size();
  v1.resize(v1.size() - (8 + 8 * nodes) - (8 + nodes) - (8 + graph_nodes));
  v1[4] = 1;
  Result<coordinator::AdmittedPlan> old = coordinator::DecodeAdmittedPlan(v1);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_THAT(FusedChains(old->plan), IsEmpty());

  // A chain that loops back on itself would never start: refused.
  coordinator::AdmittedPlan loop = a;
  loop.plan.nodes[Index(loop.plan, "std")].fused_after = "run";
  EXPECT_THAT(coordinator::DecodeAdmittedPlan(coordinator::EncodeAdmittedPlan(loop)).status().message(),
              HasSubstr("has no start"));
}

// The chain's first node's task is the only one dispatched; its completion completes the same
// shard of every node after it, and a restart replaying the commit does the same.
TEST(FusionTest, AChainsTaskCompletesTheSameShardOfEachNodeInIt) {
  Planned p = MustPlan(R"(name: p
nodes:
  - {id: a, op: import_csv, inputs: [/data/digits.csv], params: {shards: 2}}
  - {id: b, op: filter, inputs: [a], params: {where: "x > 0"}}
  - {id: c, op: derive, inputs: [b], params: {columns: {z: "x * 2"}}}
)");
  auto make = [&] {
    return std::make_unique<coordinator::JobState>("j1", p.graph, p.plan,
                                                   coordinator::DatasetListing{});
  };
  auto job = make();
  const coordinator::Taker taker;
  std::vector<uint64_t> taken;
  while (std::optional<uint64_t> t = job->TakeReady(taker)) taken.push_back(*t);
  const size_t a = Index(p.plan, "a"), b = Index(p.plan, "b"), c = Index(p.plan, "c");
  EXPECT_THAT(taken, ElementsAre(job->table().first_task(a), job->table().first_task(a) + 1));
  const wire::TaskSpec spec = job->MakeSpec(taken[1]);
  ASSERT_EQ(spec.fused.size(), 2u);
  EXPECT_EQ(spec.fused[0].node_id, "b");
  EXPECT_EQ(spec.fused[0].task_id, job->table().first_task(b) + 1);
  EXPECT_EQ(spec.fused[1].task_id, job->table().first_task(c) + 1);
  EXPECT_EQ(spec.fused[0].input_paths.front(), spec.output_path);
  EXPECT_THAT(spec.in_memory_outputs, ElementsAre(spec.output_path, spec.fused[0].output_path));

  ASSERT_TRUE(job->Complete(taken[1]));
  EXPECT_EQ(job->node_done(b), 1u);
  EXPECT_EQ(job->node_done(c), 1u);
  EXPECT_EQ(job->node_attempts(c), 2u) << "its chain's attempts: both shards started";
  EXPECT_FALSE(job->TakeReady(taker)) << "a fused node's task was queued on its own";
  ASSERT_TRUE(job->Complete(taken[0]));
  EXPECT_EQ(job->phase(), job::JobPhase::kSucceeded);

  auto restored = make();
  restored->RestoreDone(taken[0], 1);
  restored->RestoreDone(taken[1], 1);
  EXPECT_EQ(restored->phase(), job::JobPhase::kSucceeded);
}

// A chain's attempt that failed in a later node's step is that node's failure: its error, its
// task named, its attempts the chain's.
TEST(FusionTest, AFailureInAFusedStepIsThatNodesFailure) {
  Planned p = MustPlan(R"(name: p
nodes:
  - {id: a, op: import_csv, inputs: [/data/digits.csv], retries: 0, params: {shards: 2}}
  - {id: b, op: filter, inputs: [a], retries: 0, params: {where: "x > 0"}}
  - {id: c, op: derive, inputs: [b], retries: 0, params: {columns: {z: "x * 2"}}}
)");
  ASSERT_THAT(FusedChains(p.plan), ElementsAre(ElementsAre("a", "b", "c")));
  coordinator::JobState job("j1", p.graph, p.plan, coordinator::DatasetListing{});
  const coordinator::Taker taker;
  const std::optional<uint64_t> t = job.TakeReady(taker);
  ASSERT_TRUE(t);
  job.Fail(*t, {"derive: unknown column 'nope'", "w1", true, 0, "c"});
  const size_t a = Index(p.plan, "a"), c = Index(p.plan, "c");
  EXPECT_EQ(job.phase(), job::JobPhase::kFailed);
  EXPECT_EQ(job.node_error(a), "");
  EXPECT_THAT(job.node_error(c), HasSubstr("task " + std::to_string(job.table().first_task(c)) +
                                           " (shard 0) failed after 1 attempt: derive: unknown"));
  EXPECT_THAT(job.error(), HasSubstr("node 'c': "));
  EXPECT_EQ(job.node_attempts(c), 1u);
  EXPECT_EQ(job.total_attempts(), 3u) << "the chain's one attempt, counted for a, b and c";
}

}  // namespace
}  // namespace coupler::plan
