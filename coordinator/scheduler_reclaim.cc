// The Scheduler's part that moves queued work: attempts waiting unstarted behind a worker's busy
// slots are asked back for workers with open slots (PlanReclaims) and dealt again when given
// back (OnReclaimed). Part of scheduler.h's class.
#include "coordinator/scheduler.h"

#include <algorithm>
#include <map>

namespace coupler::coordinator {

std::vector<std::pair<std::string, std::vector<wire::TaskAttempt>>> Scheduler::PlanReclaims() {
  std::vector<std::pair<std::string, std::vector<wire::TaskAttempt>>> out;
  // Asked of a worker that holds it no more, or holds it started: the ask is over.
  std::erase_if(reclaiming_, [this](const auto& entry) {
    const WorkerEntry* w = registry_.Find(entry.second);
    if (w == nullptr) return true;
    auto it = w->inflight.find(entry.first);
    return it == w->inflight.end() || it->second.started;
  });
  if (HasDispatchableWork()) return out;  // ready work goes out first, by Assign
  std::vector<const WorkerEntry*> idle;
  uint64_t idle_slots = 0;
  for (const auto& [id, w] : registry_.workers()) {
    if (w.state != WorkerState::kAlive || w.free_slots() == 0) continue;
    idle.push_back(&w);
    idle_slots += w.free_slots();
  }
  // Slots an ask still out will fill are spoken for.
  idle_slots -= std::min<uint64_t>(idle_slots, reclaiming_.size());
  if (idle_slots == 0) return out;
  // Per holder: its unstarted attempts that wait (every slot of its own busy), latest first.
  struct Waiting {
    const std::string* worker;
    std::vector<std::pair<uint64_t, TaskKey>> tasks;  // (sent, key)
  };
  std::vector<Waiting> holders;
  for (const auto& [id, w] : registry_.workers()) {
    if (w.gone() || w.inflight.empty()) continue;
    uint64_t busy = uint64_t{w.gang_ranks} + w.held;
    for (const auto& [key, held] : w.inflight) busy += held.started ? 1 : 0;
    if (busy < w.info.slots) continue;  // its own slots start them soon
    Waiting waiting{&id, {}};
    for (const auto& [key, held] : w.inflight) {
      if (held.started || reclaiming_.count(key) > 0 || w.share_of.count(key) > 0) continue;
      const JobState* job = jobs_[key.first].get();
      if (job == nullptr || job->finished()) continue;
      const size_t p = job->table().Describe(key.second).plan_node;
      // Only what an idle worker could run: labels, GPUs, a host the job refused.
      const bool someone = std::any_of(idle.begin(), idle.end(), [&](const WorkerEntry* i) {
        if (job->Refuses(i->info.worker_id)) return false;
        Taker t;
        t.has_gpus = i->has_gpus();
        t.labels = &i->info.labels;
        return job->Admits(p, t);
      });
      if (someone) waiting.tasks.emplace_back(held.sent, key);
    }
    if (waiting.tasks.empty()) continue;
    std::sort(waiting.tasks.begin(), waiting.tasks.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    holders.push_back(std::move(waiting));
  }
  // Round robin over the holders, so the idle slots drain the deepest queues evenly.
  std::map<const std::string*, std::vector<wire::TaskAttempt>> asks;
  for (size_t round = 0; idle_slots > 0; ++round) {
    bool any = false;
    for (Waiting& h : holders) {
      if (round >= h.tasks.size() || idle_slots == 0) continue;
      const TaskKey key = h.tasks[round].second;
      const JobState& job = *jobs_[key.first];
      asks[h.worker].push_back({job.id(), key.second, job.attempts(key.second) - 1u});
      reclaiming_[key] = *h.worker;
      --idle_slots;
      any = true;
    }
    if (!any) break;
  }
  for (auto& [worker, attempts] : asks) out.emplace_back(*worker, std::move(attempts));
  return out;
}

std::vector<wire::TaskAttempt> Scheduler::OnReclaimed(const std::string& worker_id,
                                                      const std::vector<wire::TaskAttempt>& released) {
  // The answer covers the whole ask: what it did not release, it started.
  std::erase_if(reclaiming_, [&](const auto& entry) { return entry.second == worker_id; });
  WorkerEntry* w = registry_.Find(worker_id);
  std::vector<wire::TaskAttempt> back;
  if (w == nullptr) return back;
  for (const wire::TaskAttempt& a : released) {
    auto index = job_index_.find(a.job_id);
    if (index == job_index_.end()) continue;
    JobState& job = *jobs_[index->second];
    const TaskKey key{index->second, a.task_id};
    auto held = w->inflight.find(key);
    if (held == w->inflight.end() || held->second.started || a.task_id >= job.table().size() ||
        job.attempts(a.task_id) != a.attempt + 1u) {
      continue;
    }
    w->EndTask(key);
    job.Requeue(a.task_id);
    back.push_back(a);
  }
  return back;
}

}  // namespace coupler::coordinator
