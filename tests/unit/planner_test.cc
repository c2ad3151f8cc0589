#include "runtime/plan/planner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/plan/plan_format.h"
#include "tests/unit/spec_test_util.h"

namespace coupler::plan {
namespace {

using job::Coupling;
using ops::HardwareClass;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Plan MustPlan(const std::string& yaml) {
  job::LoadedJob j = job::testing::Load(yaml);
  EXPECT_TRUE(j.ok()) << job::testing::Errors(j);
  if (!j.ok()) return {};
  Result<Plan> p = PlanJob(*j.graph);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : Plan{};
}

const PlanNode& Node(const Plan& p, const std::string& id) {
  for (const auto& n : p.nodes) {
    if (n.id == id) return n;
  }
  ADD_FAILURE() << "no node " << id;
  static PlanNode none;
  return none;
}

// One node of every op, each in its default coupling.
constexpr const char* kEveryOp = R"(name: all
nodes:
  - {id: import, op: import_csv, inputs: [/data/digits.csv], params: {shards: 6}}
  - {id: stats, op: column_stats, inputs: [import]}
  - {id: std, op: standardize, inputs: [import, stats]}
  - {id: fm, op: filter_map, inputs: [std], params: {a: x, b: y}}
  - {id: clip, op: clip, inputs: [fm], params: {min: 0, max: 1}}
  - {id: cast, op: cast, inputs: [clip], params: {dtype: float16}}
  - {id: exec, op: exec, inputs: [/data/shards], params: {command: "cp {input} {output}"}}
  - {id: noop, op: noop, params: {tasks: 10}}
  - {id: noop_in, op: noop, inputs: [exec]}
  - {id: train, op: train, inputs: [std], ranks: 4, params: {config: /cfg/train.yaml}}
  - {id: eval, op: evaluate, inputs: [std, train]}
  - {id: mpi, op: mpi_exec, ranks: 3, params: {command: "python train.py"}}
)";

TEST(PlannerTest, ClassifiesEveryOp) {
  Plan p = MustPlan(kEveryOp);
  for (const char* loose : {"import", "stats", "std", "fm", "clip", "cast", "exec", "noop", "eval"}) {
    EXPECT_EQ(Node(p, loose).coupling, Coupling::kLoose) << loose;
    EXPECT_EQ(Node(p, loose).ranks, 1) << loose;
  }
  for (const char* tight : {"train", "mpi"}) {
    EXPECT_EQ(Node(p, tight).coupling, Coupling::kTight) << tight;
    EXPECT_EQ(Node(p, tight).tasks, 1) << tight;
    EXPECT_EQ(Node(p, tight).hardware, HardwareClass::kGpuFastInterconnect) << tight;
  }
  EXPECT_EQ(Node(p, "train").ranks, 4);
  EXPECT_EQ(Node(p, "mpi").ranks, 3);
  EXPECT_EQ(Node(p, "import").hardware, HardwareClass::kCpu);
  EXPECT_EQ(Node(p, "eval").hardware, HardwareClass::kGpu);  // inference → GPU
}

TEST(PlannerTest, CountsTasksFromShards) {
  Plan p = MustPlan(kEveryOp);
  EXPECT_EQ(Node(p, "import").tasks, 6);
  EXPECT_EQ(Node(p, "stats").map_tasks, 6);
  EXPECT_TRUE(Node(p, "stats").has_reduce);
  EXPECT_EQ(Node(p, "stats").tasks, 7);
  EXPECT_EQ(Node(p, "std").tasks, 6);  // per shard of its data input, not of the stats
  EXPECT_EQ(Node(p, "cast").tasks, 6);
  EXPECT_EQ(Node(p, "exec").tasks, 4);  // /data/shards holds 4
  EXPECT_EQ(Node(p, "noop").tasks, 10);
  EXPECT_EQ(Node(p, "noop_in").tasks, 4);
  EXPECT_EQ(Node(p, "eval").tasks, 7);
  EXPECT_EQ(p.total_tasks, 6 + 7 + 6 + 6 + 6 + 6 + 4 + 10 + 4 + 1 + 7 + 1);
}

TEST(PlannerTest, StagesAreTopologicalLevels) {
  Plan p = MustPlan(kEveryOp);
  EXPECT_EQ(Node(p, "import").stage, 0);
  EXPECT_EQ(Node(p, "noop").stage, 0);
  EXPECT_EQ(Node(p, "stats").stage, 1);
  EXPECT_EQ(Node(p, "std").stage, 2);
  EXPECT_EQ(Node(p, "train").stage, 3);
  EXPECT_EQ(Node(p, "eval").stage, 4);
  EXPECT_EQ(Node(p, "cast").stage, 5);
  EXPECT_EQ(p.stages, 6);
  for (size_t i = 1; i < p.nodes.size(); ++i) EXPECT_LE(p.nodes[i - 1].stage, p.nodes[i].stage);
  EXPECT_THAT(Node(p, "std").deps, ElementsAre("import", "stats"));
}

TEST(PlannerTest, HonoursCouplingOverrides) {
  Plan p = MustPlan(R"(name: o
nodes:
  - {id: solo, op: train, coupling: loose, params: {config: /cfg/train.yaml}}
  - {id: gang1, op: mpi_exec, coupling: tight, params: {command: x}}
  - {id: gpu_prep, op: clip, inputs: [/data/shards], resources: {gpu_memory: 2GiB}, params: {min: 0, max: 1}}
)");
  EXPECT_EQ(Node(p, "solo").coupling, Coupling::kLoose);
  EXPECT_EQ(Node(p, "solo").tasks, 1);
  EXPECT_EQ(Node(p, "solo").hardware, HardwareClass::kGpu);  // one rank needs no interconnect
  EXPECT_EQ(Node(p, "gang1").coupling, Coupling::kTight);
  EXPECT_EQ(Node(p, "gang1").ranks, 1);
  EXPECT_EQ(Node(p, "gpu_prep").hardware, HardwareClass::kGpu);
}

TEST(PlannerTest, RejectsUnvalidatedGraphs) {
  job::JobGraph g;
  g.name = "x";
  job::NodeSpec n;
  n.id = "a";
  n.op = "nope";
  g.nodes.push_back(n);
  EXPECT_FALSE(PlanJob(g).ok());
}

TEST(PlanFormatTest, JsonHasTheDocumentedFields) {
  Plan p = MustPlan(kEveryOp);
  const std::string json = FormatPlanJson(p);
  EXPECT_THAT(json, HasSubstr(R"({"job":"all",)"));
  EXPECT_THAT(json, HasSubstr(R"("id":"train","op":"train","coupling":"tight","tasks":1,)"));
  EXPECT_THAT(json, HasSubstr(R"("ranks":4,"hardware":"gpu+fast-interconnect","stage":3,"deps":["std"])"));
  const std::string table = FormatPlanTable(p);
  EXPECT_THAT(table, HasSubstr("job all: 12 nodes, 6 stages"));
  EXPECT_THAT(table, HasSubstr("tight"));
}

}  // namespace
}  // namespace coupler::plan
