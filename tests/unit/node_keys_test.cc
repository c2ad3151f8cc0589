// NodeKeys: what changes a node's reuse key, and what does not.
#include "coordinator/node_keys.h"

#include <gtest/gtest.h>

#include "tests/unit/spec_test_util.h"

namespace coupler::coordinator {
namespace {

std::vector<std::string> KeysOf(const std::string& yaml) {
  job::LoadedJob j = job::testing::Load(yaml);
  EXPECT_TRUE(j.ok()) << j.diags.ToString();
  Result<plan::Plan> plan = plan::PlanJob(*j.graph);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  Result<std::vector<std::string>> keys =
      NodeKeys(*j.graph, *plan, {}, [](const std::string&) { return Result<uint64_t>(0); });
  EXPECT_TRUE(keys.ok()) << keys.status().ToString();
  return keys.ok() ? *keys : std::vector<std::string>{};
}

std::string Chain(int b_sleep_ms, int c_retries = 0) {
  return "name: keys\nnodes:\n"
         "  - {id: a, op: noop, params: {tasks: 2}}\n"
         "  - {id: b, op: noop, inputs: [a], params: {sleep_ms: " + std::to_string(b_sleep_ms) + "}}\n"
         "  - {id: c, op: noop, inputs: [b], retries: " + std::to_string(c_retries) + "}\n";
}

TEST(NodeKeysTest, AParamChangesItsNodesKeyAndEveryKeyDownstreamOnly) {
  const std::vector<std::string> before = KeysOf(Chain(0));
  ASSERT_EQ(before.size(), 3u);
  EXPECT_EQ(before[0].size(), 32u);
  EXPECT_NE(before[0], before[1]);
  EXPECT_EQ(KeysOf(Chain(0)), before) << "keys must be stable";
  const std::vector<std::string> after = KeysOf(Chain(5));
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0], before[0]);
  EXPECT_NE(after[1], before[1]);
  EXPECT_NE(after[2], before[2]) << "c reads b: its key follows b's";
}

TEST(NodeKeysTest, WhatDoesNotChangeTheOutputsDoesNotChangeTheKey) {
  // `retries` decides how often a task may run, not what it writes.
  EXPECT_EQ(KeysOf(Chain(0, 0)), KeysOf(Chain(0, 3)));
}

}  // namespace
}  // namespace coupler::coordinator
