#include "coordinator/ready_queues.h"

#include <gtest/gtest.h>

namespace coupler::coordinator {
namespace {

using wire::TaskKind;
using Count = ReadyQueues::Count;
using Queue = ReadyQueues::Queue;

// Plan node 0: plain CPU work; 1: whole GPUs (its reduce on the CPU); 2: a node with its own
// queue (labels or a share) counted as GPU work, reduce included.
ReadyQueues ThreeNodes() {
  std::vector<ReadyQueues::Route> routes(3);
  routes[1].map_queue = Queue::kGpu;
  routes[1].map_count = Count::kGpu;
  routes[2].map_queue = routes[2].reduce_queue = Queue::kNode;
  routes[2].map_count = routes[2].reduce_count = Count::kGpu;
  return ReadyQueues(std::move(routes));
}

TEST(ReadyQueuesTest, TasksAreFiledByTheirNodesRouteAndKind) {
  ReadyQueues q = ThreeNodes();
  EXPECT_EQ(&q.QueueOf(0, TaskKind::kMap), &q.cpu());
  EXPECT_EQ(&q.QueueOf(1, TaskKind::kMap), &q.gpu());
  EXPECT_EQ(&q.QueueOf(1, TaskKind::kReduce), &q.cpu());  // a reduce never waits for a GPU
  EXPECT_EQ(&q.QueueOf(2, TaskKind::kReduce), &q.by_node()[2]);
  EXPECT_EQ(&q.QueueOf(0, TaskKind::kGang), &q.gangs());
  EXPECT_EQ(q.CountOf(1, TaskKind::kReduce), Count::kCpu);
  EXPECT_EQ(q.CountOf(2, TaskKind::kReduce), Count::kGpu);
  EXPECT_EQ(q.CountOf(0, TaskKind::kGang), Count::kGang);
}

TEST(ReadyQueuesTest, CountsFollowWhatEntersAndLeavesReadyNotTheQueues) {
  ReadyQueues q = ThreeNodes();
  q.Add(0, TaskKind::kMap, 5);
  q.Add(1, TaskKind::kMap, 3);
  q.Add(1, TaskKind::kReduce, 1);
  q.Add(2, TaskKind::kMap, 2);
  q.Add(0, TaskKind::kGang, 4);  // a gang's ranks are not loose work
  EXPECT_EQ(q.loose(), (std::pair<uint64_t, uint64_t>{6, 5}));
  EXPECT_TRUE(q.node_has_ready(2));
  q.Add(2, TaskKind::kMap, -2);
  q.Add(0, TaskKind::kGang, -4);
  q.Add(0, TaskKind::kMap, -5);
  EXPECT_EQ(q.loose(), (std::pair<uint64_t, uint64_t>{1, 3}));
  EXPECT_FALSE(q.node_has_ready(2));
  EXPECT_FALSE(q.node_has_ready(0));
  EXPECT_TRUE(q.node_has_ready(1));
  EXPECT_EQ(q.queued(), 0u);  // nothing was pushed: the counts are kept apart from the queues
}

TEST(ReadyQueuesTest, StaleEntriesAreErasedFromEveryQueue) {
  ReadyQueues q = ThreeNodes();
  for (uint64_t t = 0; t < 4; ++t) {
    q.cpu().push_back(t);
    q.gpu().push_back(t);
    q.QueueOf(2, TaskKind::kMap).push_back(t);
    q.gangs().push_back(t);
  }
  EXPECT_EQ(q.queued(), 12u);  // the gang queue is not loose work
  q.EraseIf([](uint64_t t) { return t % 2 == 0; });
  EXPECT_EQ(q.queued(), 6u);
  EXPECT_EQ(q.gangs(), (std::deque<uint64_t>{1, 3}));
  q.ClearQueues();
  EXPECT_EQ(q.queued(), 0u);
  EXPECT_TRUE(q.gangs().empty());
}

}  // namespace
}  // namespace coupler::coordinator
