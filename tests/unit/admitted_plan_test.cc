// The admitted-plan record: what it encodes comes back field for field, and what is damaged, of
// another version or not self-consistent is refused by name.
#include "coordinator/admitted_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/unit/spec_test_util.h"

namespace coupler::coordinator {
namespace {

using ::testing::HasSubstr;

AdmittedPlan Sample() {
  job::LoadedJob j = job::testing::Load(R"(name: sample
description: every kind of node
nodes:
  - {id: gen, op: noop, params: {tasks: 3}, requires: {zone: a}, retries: 1}
  - id: gang
    op: mpi_exec
    ranks: 2
    reuse: false
    resources: {cpus: 2, memory: 1GiB}
    params: {command: "echo hi"}
)");
  EXPECT_TRUE(j.ok()) << j.diags.ToString();
  AdmittedPlan a;
  a.graph = std::move(*j.graph);
  Result<plan::Plan> plan = plan::PlanJob(a.graph);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  a.plan = std::move(*plan);
  a.datasets["/data/set"] = {"/data/set/part-00000.npy", "/data/set/part-00001.npy"};
  a.workdir_marker = "0123abcd";
  a.node_keys = {"k-gen", "k-gang"};
  a.reused[1] = "/work/runs/j-000007";
  return a;
}

void ExpectSameNodes(const job::JobGraph& a, const job::JobGraph& b) {
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const job::NodeSpec& x = a.nodes[i];
    const job::NodeSpec& y = b.nodes[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.params, y.params);
    EXPECT_EQ(x.resolved_inputs.size(), y.resolved_inputs.size());
    EXPECT_EQ(x.resources.cpus, y.resources.cpus);
    EXPECT_EQ(x.resources.memory, y.resources.memory);
    EXPECT_EQ(x.coupling, y.coupling);
    EXPECT_EQ(x.ranks, y.ranks);
    EXPECT_EQ(x.retries, y.retries);
    EXPECT_EQ(x.priority, y.priority);
    EXPECT_EQ(x.reuse, y.reuse);
    EXPECT_EQ(x.required_labels, y.required_labels);
    EXPECT_EQ(x.output_schema, y.output_schema);
  }
}

TEST(AdmittedPlanTest, WhatIsEncodedComesBackFieldForField) {
  const AdmittedPlan a = Sample();
  Result<AdmittedPlan> b = DecodeAdmittedPlan(EncodeAdmittedPlan(a));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->graph.name, "sample");
  EXPECT_EQ(b->graph.description, a.graph.description);
  EXPECT_EQ(b->graph.workdir, a.graph.workdir);
  ExpectSameNodes(a.graph, b->graph);
  ASSERT_EQ(b->plan.nodes.size(), a.plan.nodes.size());
  for (size_t i = 0; i < a.plan.nodes.size(); ++i) {
    const plan::PlanNode& x = a.plan.nodes[i];
    const plan::PlanNode& y = b->plan.nodes[i];
    EXPECT_EQ(x.id, y.id);
    EXPECT_EQ(x.coupling, y.coupling);
    EXPECT_EQ(x.tasks, y.tasks);
    EXPECT_EQ(x.map_tasks, y.map_tasks);
    EXPECT_EQ(x.has_reduce, y.has_reduce);
    EXPECT_EQ(x.ranks, y.ranks);
    EXPECT_EQ(x.hardware, y.hardware);
    EXPECT_EQ(x.stage, y.stage);
    EXPECT_EQ(x.deps, y.deps);
    EXPECT_EQ(x.output_format, y.output_format);
    EXPECT_EQ(x.node_index, y.node_index);
    EXPECT_EQ(x.schema, y.schema);
  }
  EXPECT_EQ(b->plan.total_tasks, a.plan.total_tasks);
  EXPECT_EQ(b->plan.stages, a.plan.stages);
  EXPECT_EQ(b->datasets, a.datasets);
  EXPECT_EQ(b->workdir_marker, "0123abcd");
  EXPECT_EQ(b->node_keys, a.node_keys);
  EXPECT_EQ(b->reused, a.reused);
  // The gang stays a gang: enums travel as their pinned numbers.
  EXPECT_EQ(b->plan.nodes[1].coupling, job::Coupling::kTight);
}

TEST(AdmittedPlanTest, ADamagedOrForeignRecordIsRefusedByName) {
  const std::string good = EncodeAdmittedPlan(Sample());
  EXPECT_THAT(DecodeAdmittedPlan("").status().message(), HasSubstr("no CPLP tag"));
  EXPECT_THAT(DecodeAdmittedPlan(good.substr(0, good.size() - 3)).status().message(),
              HasSubstr("damaged admitted-plan record"));
  EXPECT_THAT(DecodeAdmittedPlan(good + "x").status().message(),
              HasSubstr("1 bytes after its last field"));
  std::string newer = good;
  newer[4] = 3;
  EXPECT_THAT(DecodeAdmittedPlan(newer).status().message(),
              HasSubstr("version 3; this build reads versions 1 to 2"));
  // A length prefix claiming more than the record holds is refused before anything is
  // allocated for it.
  std::string huge = good;
  for (size_t i = 6; i < 14; ++i) huge[i] = '\xff';
  Result<AdmittedPlan> bad = DecodeAdmittedPlan(huge);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("damaged"));
}

TEST(AdmittedPlanTest, ARecordWhosePlanDoesNotFitItsGraphIsRefused) {
  AdmittedPlan a = Sample();
  a.plan.nodes[0].node_index = 9;
  EXPECT_THAT(DecodeAdmittedPlan(EncodeAdmittedPlan(a)).status().message(),
              HasSubstr("names graph node 9 of 2"));
  AdmittedPlan b = Sample();
  b.plan.total_tasks += 1;
  EXPECT_THAT(DecodeAdmittedPlan(EncodeAdmittedPlan(b)).status().message(),
              HasSubstr("tasks add up to"));
}

}  // namespace
}  // namespace coupler::coordinator
