// The Scheduler's finished jobs: what they keep once their end is on disk (a big one only its
// summary) and when they leave memory altogether (EvictFinished). Part of scheduler.h's class.
#include "coordinator/scheduler.h"

#include <malloc.h>

namespace coupler::coordinator {

void Scheduler::ReleaseFinished(const std::string& job_id) {
  auto it = job_index_.find(job_id);
  if (it == job_index_.end()) return;
  JobState& job = *jobs_[it->second];
  if (!job.finished() || job.compacted()) return;
  released_.push_back(it->second);
  constexpr size_t kBigDescription = 64 << 10;
  if (job.plan().nodes.size() <= kDetailedNodes && job.graph().description.size() < kBigDescription) {
    return;
  }
  job.WantCompact();
  CompactReleased();
}

bool Scheduler::Holds(uint32_t index) const {
  const TaskKey first{index, 0};
  if (auto g = running_gangs_.lower_bound(first); g != running_gangs_.end() && g->first.first == index) {
    return true;
  }
  for (const auto& [id, w] : registry_.workers()) {
    auto t = w.inflight.lower_bound(first);
    if (t != w.inflight.end() && t->first.first == index) return true;
  }
  return false;
}

void Scheduler::CompactReleased() {
  bool freed = false;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    if (!jobs_[i]) continue;
    JobState& job = *jobs_[i];
    if (!job.compact_wanted() || job.compacted() || !job.finished()) continue;
    if (Holds(static_cast<uint32_t>(i))) continue;
    wire::JobStatus summary = Status(job);
    // A restarted coordinator shows a finished job the same way: its totals. The nodes that
    // failed stay, so that status still says where (a few: they all fail alike).
    constexpr size_t kFailedNodesKept = 20;
    std::vector<wire::NodeStatus> failed;
    for (wire::NodeStatus& n : summary.nodes) {
      if (!n.error.empty() && failed.size() < kFailedNodesKept) failed.push_back(std::move(n));
    }
    summary.nodes = std::move(failed);
    job.Compact(std::move(summary));
    freed = true;
  }
  // The state was built on the admission thread, in its own malloc arena; glibc keeps what is
  // freed there (and holes in the main heap) mapped unless asked: a cancelled 200,000-node
  // job would otherwise leave the coordinator hundreds of MiB larger until it restarts.
  if (freed) malloc_trim(0);
}

std::vector<std::pair<std::string, JobPhase>> Scheduler::EvictFinished(size_t keep,
                                                                       int64_t finished_before_ms) {
  std::vector<std::pair<std::string, JobPhase>> evicted;
  uint64_t tasks_freed = 0;
  while (!released_.empty()) {
    const uint32_t i = released_.front();
    const JobState* job = jobs_[i].get();
    // Gone already, or retried since (it is released again when it ends again).
    if (job == nullptr || !job->finished()) {
      released_.pop_front();
      continue;
    }
    // The oldest end comes first: once it may stay, so may every newer one.
    if (released_.size() <= keep && job->facts().finished_ms >= finished_before_ms) break;
    // A task of it still out (a cancelled job's), or awaited after a restart: not yet; the
    // newer ones wait behind it, which keeps the order.
    if (Holds(i)) break;
    if (auto a = awaiting_.lower_bound({i, 0}); a != awaiting_.end() && a->first.first == i) break;
    evicted.emplace_back(job->id(), job->phase());
    tasks_freed += job->table().size();
    job_index_.erase(job->id());
    jobs_[i].reset();
    released_.pop_front();
  }
  // Runs on the loop, as often as jobs finish: a trim walks the whole heap, so only when what
  // left was big; a small job's memory is simply reused by the next one.
  constexpr uint64_t kTrimAfterTasks = 64 << 10;
  if (tasks_freed >= kTrimAfterTasks) malloc_trim(0);
  return evicted;
}

}  // namespace coupler::coordinator
