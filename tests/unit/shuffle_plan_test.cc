// A shuffle node (group_by) in the plan and the coordinator: map tasks per input shard, then one
// reduce task per partition, released only when every map task is done (also when the map
// tasks were restored as done), each reduce reading its partition's run from every map task.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "coordinator/task_table.h"
#include "runtime/io/output_layout.h"
#include "runtime/plan/plan_format.h"
#include "tests/unit/scheduler_test_util.h"

namespace coupler::coordinator {
namespace {

using ::testing::HasSubstr;

constexpr char kSpec[] = R"(name: shuffle
workdir: /w
nodes:
  - {id: src, op: noop, params: {tasks: 3}}
  - id: grouped
    op: group_by
    inputs: [src]
    params: {keys: [k], partitions: 4, aggregates: {n: size(), total: sum(x)}}
  - {id: auto, op: group_by, inputs: [src], params: {keys: [k], aggregates: {n: size()}}}
  - {id: after, op: noop, inputs: [grouped]}
)";

const plan::PlanNode& Node(const plan::Plan& p, const std::string& id) {
  for (const auto& n : p.nodes) {
    if (n.id == id) return n;
  }
  ADD_FAILURE() << "no node " << id;
  return p.nodes.front();
}

TEST(ShufflePlanTest, MapTasksThenOneReducePerPartition) {
  auto job = testing::MakeJob("j-1", kSpec);
  const plan::Plan& plan = job->plan();
  const plan::PlanNode& grouped = Node(plan, "grouped");
  EXPECT_EQ(grouped.map_tasks, 3);
  EXPECT_EQ(grouped.reduce_tasks(), 4);
  EXPECT_EQ(grouped.tasks, 7);
  EXPECT_EQ(grouped.output_shards, 4);
  EXPECT_EQ(Node(plan, "auto").reduce_tasks(), 3) << "auto: as many partitions as input shards";
  EXPECT_EQ(Node(plan, "after").tasks, 4) << "a reader runs once per partition";
  const std::string table = plan::FormatPlanTable(plan);
  EXPECT_THAT(table, HasSubstr("3+4"));
  EXPECT_THAT(table, HasSubstr("grouped: 3 map tasks -> 4 partitions"));
}

TEST(ShufflePlanTest, ReducesWaitForEveryMapAndReadTheirPartitionFromEach) {
  auto job = testing::MakeJob("j-1", kSpec);
  const Taker taker;
  size_t p = 0;
  while (job->plan().nodes[p].id != "grouped") ++p;
  const uint64_t first = job->table().first_task(p);
  // The sources run first.
  std::vector<uint64_t> sources;
  while (auto t = job->TakeReady(taker)) sources.push_back(*t);
  ASSERT_EQ(sources.size(), 3u);
  for (uint64_t t : sources) ASSERT_TRUE(job->Complete(t));
  std::vector<uint64_t> maps;
  while (auto t = job->TakeReady(taker)) {
    if (job->table().Describe(*t).plan_node == p) maps.push_back(*t);
  }
  ASSERT_EQ(maps.size(), 3u) << "only the map tasks are ready";
  for (const uint64_t t : maps) {
    EXPECT_EQ(job->table().Describe(t).kind, TaskKind::kMap);
    const wire::TaskSpec spec = job->MakeSpec(t);
    EXPECT_EQ(spec.output_path, io::ShufflePrefix("/w", "grouped", spec.shard_index));
    EXPECT_EQ(spec.params.Get<int64_t>("partitions").value(), 4);
  }
  ASSERT_TRUE(job->Complete(maps[0]));
  ASSERT_TRUE(job->Complete(maps[1]));
  EXPECT_FALSE(job->TakeReady(taker)) << "a reduce started before every map task was done";
  ASSERT_TRUE(job->Complete(maps[2]));
  std::set<int64_t> partitions;
  while (auto t = job->TakeReady(taker)) {
    const TaskRef ref = job->table().Describe(*t);
    if (ref.plan_node != p) {  // `after`, once every partition is committed
      EXPECT_EQ(partitions.size(), 4u);
      break;
    }
    ASSERT_EQ(ref.kind, TaskKind::kReduce);
    partitions.insert(ref.shard);
    const wire::TaskSpec spec = job->MakeSpec(*t);
    EXPECT_EQ(spec.shard_index, ref.shard);
    EXPECT_EQ(spec.output_path, io::ShardPath("/w", "grouped", ref.shard));
    ASSERT_EQ(spec.input_paths.size(), 3u);
    for (int64_t m = 0; m < 3; ++m) {
      EXPECT_EQ(spec.input_paths[static_cast<size_t>(m)],
                io::ShufflePartitionPath(io::ShufflePrefix("/w", "grouped", m), ref.shard));
    }
    ASSERT_TRUE(job->Complete(*t));
  }
  EXPECT_EQ(partitions, (std::set<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(job->node_done(p), job->table().task_count(p));
  EXPECT_EQ(first + 7, job->table().first_task(p) + job->table().task_count(p));
}

TEST(ShufflePlanTest, RestoredMapTasksReleaseEveryReduce) {
  auto job = testing::MakeJob("j-1", kSpec);
  size_t p = 0;
  while (job->plan().nodes[p].id != "grouped") ++p;
  for (uint64_t t = 0; t < 3; ++t) job->RestoreDone(t, 1);  // the sources
  const uint64_t first = job->table().first_task(p);
  for (uint64_t t = first; t < first + 3; ++t) job->RestoreDone(t, 1);
  job->RestoreDone(first + 3, 1);  // partition 0 committed before the stop
  const Taker taker;
  std::set<int64_t> ready;
  while (auto t = job->TakeReady(taker)) {
    if (job->table().Describe(*t).plan_node == p) ready.insert(job->table().Describe(*t).shard);
  }
  EXPECT_EQ(ready, (std::set<int64_t>{1, 2, 3})) << "partition 0 ran again, or one was lost";
}

// Lineage: a reduce that lost map task 1's shuffle file makes that map task (and only it) run
// again, uncharged; the reduce's retry waits for it, and so does a reduce whose worker is lost
// meanwhile; the partitions already committed stay so.
TEST(ShufflePlanTest, AReduceThatLostAMapsFileRunsThatMapAgainAndWaitsForIt) {
  auto job = testing::MakeJob("j-1", kSpec);
  size_t p = 0;
  while (job->plan().nodes[p].id != "grouped") ++p;
  const Taker taker;
  for (uint64_t t = 0; t < 3; ++t) job->RestoreDone(t, 1);  // the sources
  const uint64_t first = job->table().first_task(p);
  std::vector<uint64_t> maps;
  while (maps.size() < 3) {
    auto t = job->TakeReady(taker);
    ASSERT_TRUE(t);
    if (job->table().Describe(*t).plan_node == p) maps.push_back(*t);
  }
  for (const uint64_t t : maps) ASSERT_TRUE(job->Complete(t));
  std::vector<uint64_t> reduces;
  while (reduces.size() < 4) {
    auto t = job->TakeReady(taker);
    ASSERT_TRUE(t);
    if (job->table().Describe(*t).plan_node == p) reduces.push_back(*t);
  }
  ASSERT_TRUE(job->Complete(reduces[0]));  // partition 0 is committed

  // Partition 1's reduce lost map task 1's file (input 1); a second report of the same loss
  // (partition 2's) finds it running again already.
  EXPECT_EQ(job->ReopenLostInputs(reduces[1], {1}), std::vector<uint64_t>{first + 1});
  job->Fail(reduces[1], {"no such file", "w1", true, 0, ""});
  EXPECT_EQ(job->task_state(reduces[1]), TaskState::kBlocked);
  EXPECT_TRUE(job->ReopenLostInputs(reduces[2], {1, 1}).empty());
  job->Fail(reduces[2], {"no such file", "w2", true, 0, ""});
  EXPECT_EQ(job->task_state(first + 1), TaskState::kReady);
  EXPECT_EQ(job->node_done(p), 3u) << "maps 0 and 2 and partition 0";
  EXPECT_EQ(job->task_state(first), TaskState::kDone);
  EXPECT_EQ(job->attempt_base(first + 1), 1u) << "the rebuild is not charged";
  // Partition 3's reduce is lost with its worker before it started: it waits too.
  job->Requeue(reduces[3]);
  EXPECT_EQ(job->task_state(reduces[3]), TaskState::kBlocked);

  // Only map task 1 runs now, under its next number.
  auto again = job->TakeReady(taker);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, first + 1);
  EXPECT_EQ(job->attempts(first + 1), 2u);
  EXPECT_FALSE(job->TakeReady(taker)) << "a reduce started before its map task ran again";
  ASSERT_TRUE(job->Complete(first + 1));
  std::set<uint64_t> rerun;
  while (auto t = job->TakeReady(taker)) {
    if (job->table().Describe(*t).plan_node == p) rerun.insert(*t);
  }
  EXPECT_EQ(rerun, (std::set<uint64_t>{reduces[1], reduces[2], reduces[3]}));
  for (const uint64_t t : rerun) ASSERT_TRUE(job->Complete(t));
  EXPECT_EQ(job->node_done(p), job->table().task_count(p));
  // Not a reduce, or a map already running again: nothing to reopen.
  EXPECT_TRUE(job->ReopenLostInputs(first, {0}).empty());
}

TEST(ShufflePlanTest, ARangeShuffleReduceReadsEverySortedShardThenEverySample) {
  auto job = testing::MakeJob("j-1", R"(name: sorted
workdir: /w
nodes:
  - {id: src, op: noop, params: {tasks: 2}}
  - {id: ordered, op: sort, inputs: [src], params: {by: [k], partitions: 3}}
)");
  size_t p = 0;
  while (job->plan().nodes[p].id != "ordered") ++p;
  const uint64_t first = job->table().first_task(p);
  const wire::TaskSpec map = job->MakeSpec(first + 1);
  EXPECT_EQ(map.output_path, io::ShufflePrefix("/w", "ordered", 1));
  const wire::TaskSpec reduce = job->MakeSpec(first + 2 + 2);  // partition 2
  EXPECT_EQ(reduce.shard_index, 2);
  EXPECT_EQ(reduce.output_path, io::ShardPath("/w", "ordered", 2));
  EXPECT_EQ(reduce.input_paths,
            (std::vector<std::string>{io::ShuffleSortedPath(io::ShufflePrefix("/w", "ordered", 0)),
                                      io::ShuffleSortedPath(io::ShufflePrefix("/w", "ordered", 1)),
                                      io::ShuffleSamplePath(io::ShufflePrefix("/w", "ordered", 0)),
                                      io::ShuffleSamplePath(io::ShufflePrefix("/w", "ordered", 1))}));
}

TEST(ShufflePlanTest, AJoinMapsEveryShardOfBothInputs) {
  auto job = testing::MakeJob("j-1", R"(name: joined
workdir: /w
nodes:
  - {id: a, op: noop, params: {tasks: 3}}
  - {id: b, op: noop, params: {tasks: 2}}
  - {id: j, op: join, inputs: [a, b], params: {on: [k], partitions: 2}}
)");
  size_t p = 0;
  while (job->plan().nodes[p].id != "j") ++p;
  EXPECT_EQ(job->plan().nodes[p].map_tasks, 5);
  const uint64_t first = job->table().first_task(p);
  EXPECT_EQ(job->MakeSpec(first + 1).input_paths,
            (std::vector<std::string>{io::ShardPath("/w", "a", 1)}));
  EXPECT_EQ(job->MakeSpec(first + 4).input_paths,
            (std::vector<std::string>{io::ShardPath("/w", "b", 1)}));
  const wire::TaskSpec reduce = job->MakeSpec(first + 5);
  EXPECT_EQ(reduce.input_paths.size(), 5u);
  EXPECT_EQ(reduce.params.Get<int64_t>("left_maps").value(), 3);
}

TEST(ShufflePlanTest, ABroadcastJoinIsOneTaskPerLeftShardReadingAllOfTheRight) {
  auto job = testing::MakeJob("j-1", R"(name: broadcast
workdir: /w
nodes:
  - {id: a, op: noop, params: {tasks: 3}}
  - {id: b, op: noop, params: {tasks: 2}}
  - {id: j, op: join, inputs: [a, b], params: {on: [k], broadcast: true}}
)");
  size_t p = 0;
  while (job->plan().nodes[p].id != "j") ++p;
  const plan::PlanNode& node = job->plan().nodes[p];
  EXPECT_FALSE(node.has_reduce);
  EXPECT_EQ(node.tasks, 3);
  EXPECT_EQ(node.output_shards, 3);
  const wire::TaskSpec spec = job->MakeSpec(job->table().first_task(p) + 1);
  EXPECT_EQ(spec.input_paths, (std::vector<std::string>{io::ShardPath("/w", "a", 1),
                                                        io::ShardPath("/w", "b", 0),
                                                        io::ShardPath("/w", "b", 1)}));
  EXPECT_EQ(spec.output_path, io::ShardPath("/w", "j", 1));
  EXPECT_THAT(plan::FormatPlanTable(job->plan()), ::testing::Not(HasSubstr("shuffles")));
}

TEST(ShufflePlanTest, RunPathsStayOutOfTheNodesPartFiles) {
  EXPECT_EQ(io::ShufflePrefix("/w", "g", 3), "/w/g/shuffle/map-00003");
  EXPECT_EQ(io::ShufflePartitionPath("/w/g/shuffle/map-00003", 17), "/w/g/shuffle/map-00003.p00017.npz");
}

}  // namespace
}  // namespace coupler::coordinator
