#include "coordinator/task_table.h"

#include <gtest/gtest.h>

#include "tests/unit/spec_test_util.h"

namespace coupler::coordinator {
namespace {

TEST(TaskTableTest, UnrollsMapReduceAndGangTasks) {
  job::LoadedJob j = job::testing::Load(R"(name: t
nodes:
  - {id: import, op: import_csv, inputs: [/data/digits.csv], params: {shards: 3}}
  - {id: stats, op: column_stats, inputs: [import]}
  - {id: train, op: train, inputs: [import], ranks: 2, params: {config: /cfg/train.yaml}}
)");
  ASSERT_TRUE(j.ok()) << j.diags.ToString();
  Result<plan::Plan> p = plan::PlanJob(*j.graph);
  ASSERT_TRUE(p.ok());
  TaskTable t(*p);
  ASSERT_EQ(t.size(), 3u + 4u + 1u);
  // Plan order: import (stage 0), then stats and train (stage 1).
  EXPECT_EQ(t.task_count(0), 3u);
  EXPECT_EQ(t.Describe(2).kind, TaskKind::kMap);
  EXPECT_EQ(t.Describe(2).shard, 2);
  EXPECT_EQ(t.Describe(3).plan_node, 1u);
  EXPECT_EQ(t.Describe(3).kind, TaskKind::kMap);
  EXPECT_EQ(t.Describe(6).kind, TaskKind::kReduce);
  EXPECT_EQ(t.Describe(7).kind, TaskKind::kGang);
  EXPECT_EQ(t.Describe(7).plan_node, 2u);
  ASSERT_EQ(t.deps(1).size(), 1u);
  EXPECT_EQ(t.deps(1)[0], 0u);
}

}  // namespace
}  // namespace coupler::coordinator
