// `broadcast: auto` decided at admission from the right input's files: a small dimension table
// (a CSV imported, then filtered) is broadcast; one past 64 MiB, one made by a command (its size
// unknown before it runs), a right or outer join and a join with explicit partitions shuffle;
// an explicit `broadcast: false` is left alone. The choice is in the params the plan is made of.
#include "runtime/plan/broadcast_choice.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/io/temp_dir.h"
#include "runtime/job/job_loader.h"
#include "runtime/plan/planner.h"

namespace coupler::plan {
namespace {

using ::testing::HasSubstr;

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

TEST(BroadcastChoiceTest, TheRightInputsSizeOnDiskDecidesAutoAtAdmission) {
  auto dir = io::TempDir::Create("broadcast-");
  ASSERT_TRUE(dir.ok());
  std::string facts = "user,amount\n";
  for (int i = 0; i < 200; ++i) facts += "u" + std::to_string(i % 7) + "," + std::to_string(i) + "\n";
  Write(dir->File("facts.csv"), facts);
  const std::string small = "user,tier\nu1,gold\nu2,silver\n";
  Write(dir->File("users.csv"), small);
  // Past the limit: valid rows for the schema's sample, then 65 MiB of file (sparse).
  std::string rows = "user,tier\n";
  while (rows.size() < (1u << 20) + 4096) rows += "u1,gold\n";
  Write(dir->File("big.csv"), rows);
  ASSERT_EQ(::truncate(dir->File("big.csv").c_str(), (65 << 20)), 0);
  Write(dir->File("job.yaml"), R"(name: joins
nodes:
  - {id: facts, op: import_csv, inputs: [facts.csv]}
  - {id: users, op: import_csv, inputs: [users.csv]}
  - {id: gold, op: filter, inputs: [users], params: {where: "tier == 'gold'"}}
  - {id: big, op: import_csv, inputs: [big.csv]}
  - {id: made, op: exec, inputs: [users], params: {command: "cp {input} {output}"}}
  - {id: small_join, op: join, inputs: [facts, gold], params: {on: [user], how: left}}
  - {id: big_join, op: join, inputs: [facts, big], params: {on: [user]}}
  - {id: made_join, op: join, inputs: [facts, made], params: {on: [user]}}
  - {id: outer_join, op: join, inputs: [facts, users], params: {on: [user], how: outer}}
  - {id: parted_join, op: join, inputs: [facts, users], params: {on: [user], partitions: 3}}
  - {id: said_no, op: join, inputs: [facts, users], params: {on: [user], broadcast: false}}
)");
  job::LoadedJob loaded = job::LoadJobFile(dir->File("job.yaml"));
  ASSERT_TRUE(loaded.ok()) << loaded.diags.ToString();
  const std::vector<BroadcastChoice> choices = ChooseBroadcasts(*loaded.graph);
  ASSERT_EQ(choices.size(), 5u);
  auto choice = [&](const std::string& id) {
    for (const BroadcastChoice& c : choices) {
      if (c.node == id) return c;
    }
    ADD_FAILURE() << "no choice for " << id;
    return BroadcastChoice{};
  };
  EXPECT_TRUE(choice("small_join").broadcast);
  EXPECT_EQ(choice("small_join").right_bytes, small.size()) << "the CSV behind the filter";
  EXPECT_THAT(choice("small_join").why, HasSubstr("at most 64.0 MiB"));
  EXPECT_FALSE(choice("big_join").broadcast);
  EXPECT_EQ(choice("big_join").right_bytes, uint64_t{65} << 20);
  EXPECT_THAT(choice("big_join").why, HasSubstr("more than 64.0 MiB"));
  EXPECT_FALSE(choice("made_join").broadcast);
  EXPECT_FALSE(choice("made_join").right_bytes);
  EXPECT_THAT(choice("made_join").why, HasSubstr("not known before it runs"));
  EXPECT_THAT(choice("outer_join").why, HasSubstr("outer join cannot broadcast"));
  EXPECT_THAT(choice("parted_join").why, HasSubstr("`partitions` is set"));

  // The plan follows the params: one task per left shard, no reduce, for the broadcast join.
  Result<Plan> plan = PlanJob(*loaded.graph);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  for (const PlanNode& n : plan->nodes) {
    const bool broadcast = n.id == "small_join";
    if (n.op != "join") continue;
    EXPECT_EQ(!n.has_reduce, broadcast) << n.id;
    EXPECT_EQ(std::get<bool>(loaded.graph->nodes[n.node_index].params.at("broadcast")), broadcast)
        << n.id;
  }
}

}  // namespace
}  // namespace coupler::plan
