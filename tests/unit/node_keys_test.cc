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

// The files a command names inside the spec's folder, quoted or not, as a flag's value too;
// nothing outside it, nothing that climbs out of it.
TEST(NodeKeysTest, CommandFilesAreTheWordsNamingPathsInTheSpecsFolder) {
  EXPECT_EQ(CommandFilesUnder("/usr/bin/python3 '/specs/steps/a b.py' {input} {output} "
                              "--config=/specs/cfg.yaml && cat /etc/x /specs/../etc/y",
                              "/specs"),
            (std::vector<std::string>{"/specs/steps/a b.py", "/specs/cfg.yaml"}));
  EXPECT_EQ(CommandFilesUnder("sh \"/specs/run.sh\"|tee /specsx/log", "/specs"),
            (std::vector<std::string>{"/specs/run.sh"}));
  EXPECT_TRUE(CommandFilesUnder("sh /specs/run.sh", "").empty());
}

// exec takes more inputs after the one it runs per shard, files among them: a script given as
// an input is hashed like a dataset file.
TEST(NodeKeysTest, AFileInputOfAnExecIsHashed) {
  job::LoadedJob j = job::testing::Load(
      "name: keys\nnodes:\n"
      "  - {id: a, op: noop, params: {tasks: 2}}\n"
      "  - {id: b, op: exec, inputs: [a, /cfg/train.yaml], params: {command: \"true {input}\"}}\n");
  ASSERT_TRUE(j.ok()) << j.diags.ToString();
  Result<plan::Plan> plan = plan::PlanJob(*j.graph);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->nodes[1].map_tasks, 2);  // one task per shard of the first input
  uint64_t content = 1;
  auto keys = [&] {
    return NodeKeys(*j.graph, *plan, {}, [&](const std::string& path) -> Result<uint64_t> {
      EXPECT_EQ(path, "/cfg/train.yaml");
      return content;
    });
  };
  const auto before = keys();
  content = 2;
  const auto after = keys();
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_NE((*before)[1], (*after)[1]);
}

// A script's bytes are part of the key of the exec node naming it through {spec_dir}, and of
// every node downstream.
TEST(NodeKeysTest, AnEditedScriptChangesItsNodesKey) {
  const std::string yaml =
      "name: keys\nnodes:\n"
      "  - {id: a, op: noop, params: {tasks: 2}}\n"
      "  - {id: b, op: exec, inputs: [a], params: {command: \"sh {spec_dir}/b.sh {input}\"}}\n";
  job::LoadedJob j = job::testing::Load(yaml);
  ASSERT_TRUE(j.ok()) << j.diags.ToString();
  Result<plan::Plan> plan = plan::PlanJob(*j.graph);
  ASSERT_TRUE(plan.ok());
  uint64_t script = 1;
  std::vector<std::string> hashed;
  auto keys = [&] {
    return NodeKeys(*j.graph, *plan, {}, [&](const std::string& path) -> Result<uint64_t> {
      hashed.push_back(path);
      return path == "/specs/b.sh" ? script : Result<uint64_t>(NotFound(path));
    });
  };
  const Result<std::vector<std::string>> before = keys();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(hashed, (std::vector<std::string>{"/specs/b.sh"}));
  script = 2;
  const Result<std::vector<std::string>> after = keys();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)[0], (*before)[0]);
  EXPECT_NE((*after)[1], (*before)[1]);
}

}  // namespace
}  // namespace coupler::coordinator
