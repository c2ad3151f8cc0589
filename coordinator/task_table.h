// TaskTable: a Plan unrolled into the tasks the coordinator hands out — map tasks per shard, the
// reduce tasks after them (one, or one per partition of a shuffle), or one gang — in compact per-node ranges so a 1,000,000-task job
// costs a few bytes per task. Pure logic.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/plan/planner.h"
#include "runtime/wire/task_kind.h"

namespace coupler::coordinator {

using wire::TaskKind;

struct TaskRef {
  uint32_t plan_node = 0;  // index into Plan::nodes
  TaskKind kind = TaskKind::kMap;
  // Map tasks: the shard they read and write. Reduce tasks: the output partition they write
  // (0 for a node with one reduce).
  int64_t shard = 0;
};

class TaskTable {
 public:
  explicit TaskTable(const plan::Plan& plan);

  uint64_t size() const { return total_; }
  // Tasks of one plan node are the ids [first_task(i), first_task(i) + task_count(i)).
  uint64_t first_task(size_t plan_node) const { return first_[plan_node]; }
  uint64_t task_count(size_t plan_node) const { return first_[plan_node + 1] - first_[plan_node]; }

  // What task `id` is. `id` must be < size().
  TaskRef Describe(uint64_t id) const;

  // Plan-node indices each node waits on (its deps), resolved once.
  const std::vector<uint32_t>& deps(size_t plan_node) const { return deps_[plan_node]; }

 private:
  std::vector<uint64_t> first_;  // size nodes + 1
  std::vector<uint64_t> map_tasks_;  // per node: the map tasks before its reduce tasks
  std::vector<uint8_t> gang_;
  std::vector<std::vector<uint32_t>> deps_;
  uint64_t total_ = 0;
};

}  // namespace coupler::coordinator
