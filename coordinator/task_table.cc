#include "coordinator/task_table.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "runtime/check.h"

namespace coupler::coordinator {

TaskTable::TaskTable(const plan::Plan& plan) {
  const size_t n = plan.nodes.size();
  first_.resize(n + 1, 0);
  map_tasks_.resize(n, 0);
  gang_.resize(n, 0);
  deps_.resize(n);
  std::unordered_map<std::string, uint32_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(plan.nodes[i].id, static_cast<uint32_t>(i));
  for (size_t i = 0; i < n; ++i) {
    const plan::PlanNode& node = plan.nodes[i];
    COUPLER_CHECK(node.tasks >= 0) << node.id;
    first_[i + 1] = first_[i] + static_cast<uint64_t>(node.tasks);
    // A node without reduce tasks is all map tasks (a gang's one task is told apart by gang_).
    map_tasks_[i] = node.has_reduce ? static_cast<uint64_t>(node.map_tasks)
                                    : static_cast<uint64_t>(node.tasks);
    gang_[i] = node.coupling == job::Coupling::kTight ? 1 : 0;
    for (const auto& d : node.deps) {
      auto it = index.find(d);
      COUPLER_CHECK(it != index.end()) << "plan node " << node.id << " depends on unknown " << d;
      deps_[i].push_back(it->second);
    }
  }
  total_ = first_[n];
}

TaskRef TaskTable::Describe(uint64_t id) const {
  COUPLER_CHECK(id < total_) << "task " << id << " of " << total_;
  // The node whose range holds id: the last `first_` entry <= id.
  auto it = std::upper_bound(first_.begin(), first_.end(), id);
  const auto node = static_cast<uint32_t>(std::distance(first_.begin(), it) - 1);
  const uint64_t offset = id - first_[node];
  TaskRef ref;
  ref.plan_node = node;
  if (gang_[node]) {
    ref.kind = TaskKind::kGang;
  } else if (offset >= map_tasks_[node]) {
    ref.kind = TaskKind::kReduce;
    ref.shard = static_cast<int64_t>(offset - map_tasks_[node]);
  } else {
    ref.kind = TaskKind::kMap;
    ref.shard = static_cast<int64_t>(offset);
  }
  return ref;
}

}  // namespace coupler::coordinator
