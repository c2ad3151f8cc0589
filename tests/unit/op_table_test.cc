// The worker's op table and the registry are one table: every op a job spec may name has a
// function a worker runs it with, and the worker knows no op the registry does not declare.
#include "worker/ops/op_table.h"

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "runtime/ops/op_registry.h"

namespace coupler::worker {
namespace {

TEST(OpTableTest, EveryRegisteredOpHasARunner) {
  for (const std::string& name : ops::OpRegistry::Builtin().Names()) {
    const OpEntry* op = FindOp(name);
    ASSERT_NE(op, nullptr) << "no worker runner for registered op '" << name << "'";
    EXPECT_NE(op->run, nullptr) << name;
    EXPECT_EQ(op->def, ops::OpRegistry::Builtin().Find(name)) << name;
  }
}

TEST(OpTableTest, EveryRunnerBelongsToOneRegisteredOp) {
  std::set<std::string> seen;
  for (const OpEntry& op : WorkerOps()) {
    ASSERT_NE(op.def, nullptr);
    EXPECT_TRUE(seen.insert(std::string(op.name())).second) << "two runners for " << op.name();
  }
  EXPECT_EQ(seen.size(), ops::OpRegistry::Builtin().Names().size());
  EXPECT_EQ(FindOp("frobnicate"), nullptr);
}

}  // namespace
}  // namespace coupler::worker
