// ReadyQueues: where one job's ready tasks wait, and how many there are. A task is filed by
// its plan node's route, fixed when the job is admitted: loose work any worker may take (CPU
// or whole-GPU), a node's own queue (labels or a GPU share: checked once per node, not once
// per task), or the gang queue. The counts are kept as tasks enter and leave kReady (JobState
// says when), so status and the autoscale advice never walk the queues. The queues may hold
// stale ids (tasks that left kReady meanwhile): whoever pops them skips those.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "runtime/wire/task_kind.h"

namespace coupler::coordinator {

class ReadyQueues {
 public:
  // Which count a ready task adds to: the loose CPU or GPU work that status reports, or none
  // for a gang's ranks (reported apart).
  enum class Count : uint8_t { kCpu = 0, kGpu = 1, kGang = 2 };
  // Which queue a loose task waits in.
  enum class Queue : uint8_t { kCpu, kGpu, kNode };
  // A plan node's route, for its map tasks and for its reduce tasks (never on a GPU).
  struct Route {
    Queue map_queue = Queue::kCpu;
    Count map_count = Count::kCpu;
    Queue reduce_queue = Queue::kCpu;
    Count reduce_count = Count::kCpu;
  };

  ReadyQueues() = default;
  explicit ReadyQueues(std::vector<Route> routes);

  // The queue a ready task of the plan node waits in (a gang's: the gang queue).
  std::deque<uint64_t>& QueueOf(size_t plan_node, wire::TaskKind kind);
  Count CountOf(size_t plan_node, wire::TaskKind kind) const;
  // `delta` tasks of the node entered (> 0) or left (< 0) kReady.
  void Add(size_t plan_node, wire::TaskKind kind, int64_t delta);

  // Entries in the loose queues (stale ones included).
  size_t queued() const;
  // Loose tasks in kReady, {cpu, gpu}, backing-off retries included (they are in no queue).
  std::pair<uint64_t, uint64_t> loose() const { return {loose_[0], loose_[1]}; }
  bool node_has_ready(size_t plan_node) const { return node_ready_[plan_node] > 0; }

  std::deque<uint64_t>& cpu() { return cpu_; }
  std::deque<uint64_t>& gpu() { return gpu_; }
  const std::deque<uint64_t>& cpu() const { return cpu_; }
  const std::deque<uint64_t>& gpu() const { return gpu_; }
  std::map<size_t, std::deque<uint64_t>>& by_node() { return by_node_; }
  const std::map<size_t, std::deque<uint64_t>>& by_node() const { return by_node_; }
  std::deque<uint64_t>& gangs() { return gangs_; }
  const std::deque<uint64_t>& gangs() const { return gangs_; }

  // Drops every entry of every queue for which `stale(task)` holds.
  template <class Pred>
  void EraseIf(Pred stale) {
    std::erase_if(cpu_, stale);
    std::erase_if(gpu_, stale);
    for (auto& [p, queue] : by_node_) std::erase_if(queue, stale);
    std::erase_if(gangs_, stale);
  }
  // Empties the queues; the counts are the caller's to set right (every task leaves kReady).
  void ClearQueues();
  // Everything, memory included (a compacted job).
  void Free();

 private:
  std::vector<Route> routes_;  // per plan node
  std::deque<uint64_t> cpu_;
  std::deque<uint64_t> gpu_;  // tasks of nodes asking for whole GPUs
  std::map<size_t, std::deque<uint64_t>> by_node_;
  std::deque<uint64_t> gangs_;
  std::vector<uint64_t> node_ready_;       // per plan node: tasks in kReady
  std::array<uint64_t, 2> loose_{0, 0};    // by Count (kCpu, kGpu)
};

}  // namespace coupler::coordinator
