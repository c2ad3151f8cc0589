#include "coordinator/scheduler.h"

#include <algorithm>

namespace coupler::coordinator {

void Scheduler::AddJob(std::unique_ptr<JobState> job) {
  job_index_[job->id()] = static_cast<uint32_t>(jobs_.size());
  jobs_.push_back(std::move(job));
}

JobState* Scheduler::FindJob(const std::string& id) {
  auto it = job_index_.find(id);
  return it == job_index_.end() ? nullptr : jobs_[it->second].get();
}

std::vector<LostAttempt> Scheduler::LoseTasks(const std::string& worker_id,
                                              const std::set<TaskKey>& held,
                                              const std::string& why) {
  std::vector<LostAttempt> lost;
  for (const auto& [job_idx, task] : held) {
    JobState& job = *jobs_[job_idx];
    if (job.task_state(task) != TaskState::kRunning) continue;
    lost.push_back({job.id(), task, job.attempts(task) - 1u, worker_id});
    job.Fail(task, why);
  }
  return lost;
}

std::vector<LostAttempt> Scheduler::RegisterWorker(const wire::RegisterWorker& info,
                                                   int64_t now_ms) {
  std::set<TaskKey> held = registry_.Register(info, now_ms);
  return LoseTasks(info.worker_id, held,
                   "worker " + info.worker_id + " restarted while running the task");
}

std::vector<LostAttempt> Scheduler::ReapSilentWorkers(int64_t now_ms) {
  std::vector<LostAttempt> lost;
  for (auto& [id, held] : registry_.ReapSilent(now_ms)) {
    auto l = LoseTasks(id, held, "worker " + id + " died (no heartbeat) while running the task");
    lost.insert(lost.end(), l.begin(), l.end());
  }
  return lost;
}

std::vector<LostAttempt> Scheduler::RemoveWorker(const std::string& id) {
  return LoseTasks(id, registry_.Remove(id), "worker " + id + " left while running the task");
}

std::vector<wire::TaskSpec> Scheduler::Assign(const std::string& worker_id) {
  std::vector<wire::TaskSpec> out;
  WorkerEntry* w = registry_.Find(worker_id);
  if (w == nullptr || jobs_.empty()) return out;
  uint32_t credit = w->credit();
  if (credit == 0) return out;

  // The highest priority among jobs with ready work; round robin among those jobs.
  int best = INT32_MIN;
  for (const auto& j : jobs_) {
    if (!j->finished() && j->ready_count() > 0) best = std::max(best, j->priority());
  }
  if (best == INT32_MIN) return out;
  const size_t n = jobs_.size();
  size_t idle_rounds = 0;
  for (size_t i = rr_cursor_ % n; credit > 0 && idle_rounds < n; i = (i + 1) % n) {
    JobState& job = *jobs_[i];
    std::optional<uint64_t> t;
    if (!job.finished() && job.priority() == best) t = job.TakeReady(w->has_gpus());
    if (!t) {
      ++idle_rounds;
      continue;
    }
    idle_rounds = 0;
    w->inflight.insert({static_cast<uint32_t>(i), *t});
    out.push_back(job.MakeSpec(*t));
    --credit;
    rr_cursor_ = i + 1;
  }
  return out;
}

bool Scheduler::HasDispatchableWork() const {
  bool credit = false;
  for (const auto& [id, w] : registry_.workers()) credit |= w.credit() > 0;
  if (!credit) return false;
  for (const auto& j : jobs_) {
    if (!j->finished() && j->ready_count() > 0) return true;
  }
  return false;
}

OutcomeKind Scheduler::OnOutcome(const std::string& worker_id, const wire::TaskOutcome& o) {
  auto it = job_index_.find(o.job_id);
  if (it == job_index_.end()) return OutcomeKind::kDropped;
  JobState& job = *jobs_[it->second];
  if (o.task_id >= job.table().size()) return OutcomeKind::kDropped;
  if (WorkerEntry* w = registry_.Find(worker_id)) {
    if (w->inflight.erase({it->second, o.task_id}) > 0) ++w->tasks_done;
  }
  if (o.ok) {
    if (!job.Complete(o.task_id)) return OutcomeKind::kDropped;
    job.CountDevice(o.device.empty() ? "cpu" : o.device, o.gpu_requested_but_cpu);
    return OutcomeKind::kCommitted;
  }
  if (job.task_state(o.task_id) != TaskState::kRunning) return OutcomeKind::kDropped;
  job.Fail(o.task_id, o.error);
  return job.phase() == JobPhase::kFailed ? OutcomeKind::kFailed : OutcomeKind::kRetrying;
}

std::vector<std::string> Scheduler::Cancel(const std::string& job_id) {
  std::vector<std::string> holders;
  auto it = job_index_.find(job_id);
  if (it == job_index_.end()) return holders;
  jobs_[it->second]->Cancel();
  for (auto& [id, w] : registry_.mutable_workers()) {
    bool holds = false;
    for (auto k = w.inflight.begin(); k != w.inflight.end();) {
      if (k->first == it->second) {
        holds = true;
        k = w.inflight.erase(k);  // their results will be dropped; the credit is free now
      } else {
        ++k;
      }
    }
    if (holds) holders.push_back(id);
  }
  return holders;
}

wire::JobStatus Scheduler::Status(const JobState& job) const {
  wire::JobStatus s;
  s.id = job.id();
  s.name = job.graph().name;
  s.state = std::string(JobPhaseName(job.phase()));
  s.tasks_total = job.table().size();
  s.tasks_done = job.done();
  s.tasks_running = job.running();
  s.tasks_failed = job.failed();
  s.tasks_queued = job.finished() ? 0 : s.tasks_total - s.tasks_done - s.tasks_running - s.tasks_failed;
  s.attempts = job.total_attempts();
  s.error = job.error();
  s.devices = job.devices();
  s.gpu_fallbacks = job.gpu_fallbacks();
  s.submitted_ms = job.submitted_ms();
  s.finished_ms = job.finished_ms();
  const auto& plan = job.plan();
  for (size_t p = 0; p < plan.nodes.size(); ++p) {
    wire::NodeStatus n;
    n.id = plan.nodes[p].id;
    n.tasks_total = job.table().task_count(p);
    n.tasks_done = job.node_done(p);
    n.attempts = job.node_attempts(p);
    n.error = job.node_error(p);
    if (!n.error.empty()) {
      n.state = "failed";
    } else if (n.tasks_done == n.tasks_total) {
      n.state = "done";
    } else if (job.phase() == JobPhase::kCancelled) {
      n.state = "cancelled";
    } else {
      n.state = job.node_released(p) ? (n.attempts > 0 ? "running" : "ready") : "pending";
    }
    s.nodes.push_back(std::move(n));
  }
  return s;
}

std::vector<wire::WorkerStatus> Scheduler::Workers() const {
  std::vector<wire::WorkerStatus> out;
  for (const auto& [id, w] : registry_.workers()) {
    wire::WorkerStatus s;
    s.id = id;
    s.host = w.info.host;
    s.slots = w.info.slots;
    s.running = static_cast<uint32_t>(w.inflight.size());
    s.state = std::string(WorkerStateName(w.state));
    s.gpus = w.info.gpus;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace coupler::coordinator
