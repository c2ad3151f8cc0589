#include "coordinator/ready_queues.h"

namespace coupler::coordinator {

using wire::TaskKind;

ReadyQueues::ReadyQueues(std::vector<Route> routes)
    : routes_(std::move(routes)), node_ready_(routes_.size(), 0) {}

std::deque<uint64_t>& ReadyQueues::QueueOf(size_t p, TaskKind kind) {
  if (kind == TaskKind::kGang) return gangs_;
  const Route& r = routes_[p];
  switch (kind == TaskKind::kReduce ? r.reduce_queue : r.map_queue) {
    case Queue::kNode:
      return by_node_[p];
    case Queue::kGpu:
      return gpu_;
    case Queue::kCpu:
      break;
  }
  return cpu_;
}

ReadyQueues::Count ReadyQueues::CountOf(size_t p, TaskKind kind) const {
  if (kind == TaskKind::kGang) return Count::kGang;
  const Route& r = routes_[p];
  return kind == TaskKind::kReduce ? r.reduce_count : r.map_count;
}

void ReadyQueues::Add(size_t p, TaskKind kind, int64_t delta) {
  node_ready_[p] += static_cast<uint64_t>(delta);  // wraps back on the way down
  const Count c = CountOf(p, kind);
  if (c != Count::kGang) loose_[static_cast<size_t>(c)] += static_cast<uint64_t>(delta);
}

size_t ReadyQueues::queued() const {
  size_t n = cpu_.size() + gpu_.size();
  for (const auto& [p, queue] : by_node_) n += queue.size();
  return n;
}

void ReadyQueues::ClearQueues() {
  cpu_.clear();
  gpu_.clear();
  by_node_.clear();
  gangs_.clear();
}

void ReadyQueues::Free() { *this = ReadyQueues(); }

}  // namespace coupler::coordinator
