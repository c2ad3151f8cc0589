#include "coordinator/scheduler.h"

#include <algorithm>

#include "coordinator/status_report.h"

namespace coupler::coordinator {

int64_t Scheduler::RetryAt(uint32_t failures) const {
  const int64_t delay = RetryDelayMs(retry_, failures);
  return delay > 0 && clock_ ? clock_() + delay : 0;
}

void Scheduler::ReleaseDueRetries() {
  if (!clock_) return;
  const int64_t now = clock_();
  for (const auto& job : jobs_) {
    if (job && job->backing_off() > 0) job->ReleaseDueRetries(now);
  }
}

bool Scheduler::OtherWorkerCanRun(const JobState& job, size_t plan_node,
                                  const std::vector<std::string>& tried) const {
  for (const auto& [id, entry] : registry_.workers()) {
    const WorkerEntry& w = entry;
    if (w.state != WorkerState::kAlive || w.credit() == 0 || job.Refuses(id) ||
        std::find(tried.begin(), tried.end(), id) != tried.end()) {
      continue;
    }
    Taker other;
    other.has_gpus = w.has_gpus();
    other.labels = &w.info.labels;
    other.share_fits = [this, &w](uint64_t bytes) { return ShareFits(w, bytes); };
    if (job.Admits(plan_node, other)) return true;
  }
  return false;
}

void Scheduler::AddJob(std::unique_ptr<JobState> job) {
  if (auto it = job_index_.find(job->id());
      it != job_index_.end() && jobs_[it->second]->compacted()) {
    // `coupler retry` of a compacted job: the job rebuilt from the store takes its place.
    jobs_[it->second] = std::move(job);
    return;
  }
  job_index_[job->id()] = static_cast<uint32_t>(jobs_.size());
  jobs_.push_back(std::move(job));
}

JobState* Scheduler::FindJob(const std::string& id) {
  auto it = job_index_.find(id);
  return it == job_index_.end() ? nullptr : jobs_[it->second].get();
}

const JobState* Scheduler::FindJob(const std::string& id) const {
  auto it = job_index_.find(id);
  return it == job_index_.end() ? nullptr : jobs_[it->second].get();
}

void Scheduler::EndGang(const TaskKey& key) {
  auto it = running_gangs_.find(key);
  if (it == running_gangs_.end()) return;
  for (const auto& [id, n] : it->second.workers) {
    if (WorkerEntry* w = registry_.Find(id)) w->gang_ranks -= std::min(n, w->gang_ranks);
  }
  running_gangs_.erase(it);
}

std::vector<LostAttempt> Scheduler::LoseTasks(const std::string& worker_id, HeldTasks held,
                                              uint32_t slots, const std::string& why,
                                              const std::set<TaskKey>& keep_gangs,
                                              bool withdrawn) {
  gangs_.DropWorker(worker_id);
  // A gang's attempt lives in its leader's mpirun: it is lost with the leader. A worker that
  // only lent slots takes them with it; if its host's ranks died too, mpirun ends the group and
  // the leader reports the failure.
  std::vector<TaskKey> gangs;
  for (auto& [key, gang] : running_gangs_) {
    if (gang.workers.front().first == worker_id) {
      if (!keep_gangs.count(key)) gangs.push_back(key);
      continue;
    }
    std::erase_if(gang.workers, [&](const auto& w) { return w.first == worker_id; });
  }
  std::vector<std::pair<HeldTask, TaskKey>> loose;
  for (const auto& [key, held_task] : held) loose.emplace_back(held_task, key);
  std::sort(loose.begin(), loose.end(),
            [](const auto& a, const auto& b) { return a.first.sent < b.first.sent; });
  std::vector<LostAttempt> lost;
  auto lose = [&](const TaskKey& key, bool started) {
    JobState& job = *jobs_[key.first];
    if (job.task_state(key.second) != TaskState::kRunning) return;
    if (!started) {
      job.Requeue(key.second);
      return;
    }
    lost.push_back({job.id(), key.second, job.attempts(key.second) - 1u, worker_id});
    if (withdrawn) {
      // The operator took the worker away: at once, elsewhere, and free.
      job.Reissue(key.second);
      return;
    }
    // A lost worker may have been the task's fault or the host's: retried, after its back-off,
    // and on another worker when there is one.
    job.Fail(key.second, {why, worker_id, true, RetryAt(job.attempts(key.second)), {}});
  };
  for (const TaskKey& key : gangs) {
    EndGang(key);
    lose(key, true);
  }
  // Charged: what it reported running. Its slots take tasks in the order they were sent, so
  // only the oldest `slots` could have started unreported; those are charged at their third
  // such loss, and the rest, only queued there, go back uncharged: a crash-looping worker
  // cannot use up the retries of work it never began.
  // Newest first: each goes to the front of its queue, so they keep the order they had.
  for (size_t i = loose.size(); i-- > 0;) {
    const auto& [held_task, key] = loose[i];
    const bool could_have_started = i < slots;
    bool charge = held_task.started;
    if (!charge && could_have_started) {
      JobState& job = *jobs_[key.first];
      charge = job.task_state(key.second) == TaskState::kRunning &&
               job.ChargeUnreportedLoss(key.second);
    }
    lose(key, charge);
  }
  return lost;
}

std::vector<LostAttempt> Scheduler::ReapSilentWorkers(int64_t now_ms) {
  std::vector<LostAttempt> lost;
  for (auto& [id, held] : registry_.ReapSilent(now_ms)) {
    auto l = LoseTasks(id, std::move(held), registry_.Find(id)->info.slots,
                       "worker " + id + " died (no heartbeat) while running the task");
    lost.insert(lost.end(), l.begin(), l.end());
  }
  CompactReleased();  // the tasks a finished job still had out may have ended meanwhile
  return lost;
}

std::vector<LostAttempt> Scheduler::RemoveWorker(const std::string& id, int64_t now_ms,
                                                bool withdrawn) {
  const WorkerEntry* w = registry_.Find(id);
  const uint32_t slots = w != nullptr ? w->info.slots : 0;
  return LoseTasks(id, registry_.Remove(id, now_ms), slots,
                   "worker " + id + " left while running the task", {}, withdrawn);
}

std::vector<std::pair<std::string, wire::TaskSpec>> Scheduler::PlaceGangs(int64_t now_ms) {
  ReleaseDueRetries();
  std::vector<GangRequest> waiting;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    if (!jobs_[i] || jobs_[i]->finished()) continue;
    const JobState& job = *jobs_[i];
    for (const uint64_t t : job.ReadyGangs()) {
      const size_t p = job.table().Describe(t).plan_node;
      waiting.push_back({{static_cast<uint32_t>(i), t}, static_cast<uint32_t>(job.ranks(p)),
                         job.wants_gpus(p), job.required_labels(p), &job.refused_hosts()});
    }
  }
  std::vector<std::pair<std::string, wire::TaskSpec>> out;
  for (GangPlacement& placed : gangs_.Place(waiting, registry_, now_ms)) {
    JobState& job = *jobs_[placed.key.first];
    job.StartGang(placed.key.second);
    wire::TaskSpec spec = job.MakeSpec(placed.key.second);
    for (const auto& [id, n] : placed.workers) {
      spec.gang_hosts.push_back(registry_.Find(id)->info.address);
      spec.gang_ranks.push_back(n);
    }
    running_gangs_[placed.key] = {spec.attempt, placed.workers};
    job.facts().gang_hosts[placed.key.second] = spec.gang_hosts;
    out.emplace_back(placed.workers.front().first, std::move(spec));
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<wire::TaskSpec>>> Scheduler::AssignBalanced() {
  std::vector<std::pair<std::string, std::vector<wire::TaskSpec>>> out;
  std::vector<std::string> takers;
  std::vector<std::pair<GpuPreference, std::string>> warm;  // takers whose GPUs run hot
  for (const auto& [id, w] : registry_.workers()) {
    if (w.credit() == 0) continue;
    if (w.gpu_preference != GpuPreference::kCool) {
      warm.emplace_back(w.gpu_preference, id);
    } else {
      takers.push_back(id);
    }
  }
  // Cool GPUs first: a worker whose GPUs run hot or throttled takes what the others leave.
  // (Sorted only when there are such workers: this runs at every dispatch.)
  std::stable_sort(warm.begin(), warm.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [preference, id] : warm) takers.push_back(std::move(id));
  if (takers.empty()) return out;
  std::map<std::string, size_t> last;  // a worker's latest message in `out`
  // Adds up to `limit` tasks for `id`, filling its latest message up to kMaxTasksPerAssignment
  // before it starts another. How many it got.
  auto deal = [&](const std::string& id, uint32_t limit) {
    uint32_t dealt = 0;
    while (dealt < limit) {
      auto it = last.find(id);
      const size_t held = it != last.end() ? out[it->second].second.size() : 0;
      const bool fits = it != last.end() && held < kMaxTasksPerAssignment;
      const auto room = static_cast<uint32_t>(fits ? kMaxTasksPerAssignment - held
                                                   : kMaxTasksPerAssignment);
      std::vector<wire::TaskSpec> got = Assign(id, std::min(limit - dealt, room));
      if (got.empty()) break;
      dealt += static_cast<uint32_t>(got.size());
      if (fits) {
        auto& mine = out[it->second].second;
        mine.insert(mine.end(), std::make_move_iterator(got.begin()),
                    std::make_move_iterator(got.end()));
        continue;
      }
      last.insert_or_assign(id, out.size());
      out.emplace_back(id, std::move(got));
    }
    return dealt;
  };
  // Open slots first: a task that can start now must not queue behind another worker's busy
  // slots as its prefetch (then it would only be reclaimed again).
  for (const std::string& id : takers) {
    const WorkerEntry* w = registry_.Find(id);
    const uint32_t open = w != nullptr ? w->free_slots() : 0;
    if (open > 0) deal(id, open);
  }
  size_t ready = 0;
  for (const auto& j : jobs_) ready += !j || j->finished() ? 0 : j->ready_count();
  if (ready == 0) return out;
  // A round's share: the ready tasks over the workers that may take them. Labels, GPUs or a
  // refused host can leave a worker with less than its share; later rounds give the rest out.
  const auto share =
      static_cast<uint32_t>(std::clamp<size_t>((ready + takers.size() - 1) / takers.size(), 1,
                                               UINT32_MAX));
  for (bool progress = true; progress && !takers.empty();) {
    progress = false;
    for (const std::string& id : takers) progress |= deal(id, share) > 0;
  }
  return out;
}

std::vector<wire::TaskSpec> Scheduler::Assign(const std::string& worker_id, uint32_t limit) {
  std::vector<wire::TaskSpec> out;
  WorkerEntry* w = registry_.Find(worker_id);
  if (w == nullptr || jobs_.empty()) return out;
  uint32_t credit = std::min(w->credit(), limit);
  if (credit == 0) return out;

  ReleaseDueRetries();
  Taker taker;
  taker.has_gpus = w->has_gpus();
  taker.labels = &w->info.labels;
  taker.share_fits = [this, w](uint64_t bytes) { return ShareFits(*w, bytes); };
  taker.worker_id = &w->info.worker_id;
  taker.elsewhere = [this](const JobState& job, size_t p, const std::vector<std::string>& tried) {
    return OtherWorkerCanRun(job, p, tried);
  };
  // The highest priority among jobs with ready work this worker may run (a job waiting for
  // other labels must not hold back the rest); round robin among those jobs.
  int best = INT32_MIN;
  size_t ready = 0;
  for (const auto& j : jobs_) {
    if (j && !j->finished() && !j->Refuses(worker_id) && j->HasReadyFor(taker)) {
      best = std::max(best, j->priority());
      ready += j->ready_count();
    }
  }
  if (best == INT32_MIN) return out;
  // At most what it may take (its slots and prefetch: thousands) and what is ready: grown one
  // spec at a time, the vector moved every spec again at each doubling.
  out.reserve(std::min<size_t>(credit, ready));
  const size_t n = jobs_.size();
  size_t idle_rounds = 0;
  for (size_t i = rr_cursor_ % n; credit > 0 && idle_rounds < n; i = (i + 1) % n) {
    std::optional<uint64_t> t;
    if (jobs_[i] && !jobs_[i]->finished() && jobs_[i]->priority() == best &&
        !jobs_[i]->Refuses(worker_id)) {
      t = jobs_[i]->TakeReady(taker);
    }
    if (!t) {
      ++idle_rounds;
      continue;
    }
    idle_rounds = 0;
    JobState& job = *jobs_[i];
    w->StartTask({static_cast<uint32_t>(i), *t}, job.gpu_share(job.table().Describe(*t).plan_node));
    out.push_back(job.MakeSpec(*t));
    --credit;
    rr_cursor_ = i + 1;
  }
  return out;
}

bool Scheduler::ShareFits(const WorkerEntry& w, uint64_t bytes) const {
  bool any_gpu = false;
  bool any_ever = false;
  for (const auto& [id, other] : registry_.workers()) {
    if (other.state != WorkerState::kAlive || other.gpu_shares.empty()) continue;
    any_gpu = true;
    any_ever |= other.gpu_shares.CanEverFit(bytes);
  }
  // A pool without GPUs runs shares on the CPU (flagged in status); a pool with GPUs keeps them
  // on the GPUs. A share no device anywhere could hold goes to a GPU worker, which fails it at
  // once with the sizes, rather than waiting forever.
  if (!any_gpu) return true;
  if (w.gpu_shares.empty()) return false;
  return w.gpu_shares.FitsNow(bytes) || !any_ever;
}

bool Scheduler::HasDispatchableWork() const {
  bool credit = false;
  for (const auto& [id, w] : registry_.workers()) credit |= w.credit() > 0;
  if (!credit) return false;
  for (const auto& j : jobs_) {
    if (j && !j->finished() && j->ready_count() > 0) return true;
  }
  return false;
}

void Scheduler::MarkStarted(const std::string& worker_id,
                            const std::vector<wire::TaskAttempt>& running) {
  WorkerEntry* w = registry_.Find(worker_id);
  if (w == nullptr) return;
  for (const wire::TaskAttempt& r : running) {
    auto it = job_index_.find(r.job_id);
    if (it == job_index_.end()) continue;
    const JobState& job = *jobs_[it->second];
    if (r.task_id >= job.table().size() || job.attempts(r.task_id) != r.attempt + 1u) continue;
    w->MarkStarted({it->second, r.task_id});
  }
}

bool Scheduler::OnHeartbeat(const std::string& worker_id, const wire::Heartbeat& beat,
                            int64_t now_ms) {
  if (beat.draining) registry_.SetDraining(worker_id);
  MarkStarted(worker_id, beat.running);
  // Its results travel ahead of this beat on the same connection, so what it finished is no
  // longer held here: holding nothing means nothing was lost.
  if (!beat.draining || !beat.running.empty() || !registry_.MarkDrained(worker_id, now_ms)) {
    return false;
  }
  gangs_.DropWorker(worker_id);
  return true;
}

OutcomeKind Scheduler::OnOutcome(const std::string& worker_id, const wire::TaskOutcome& o) {
  reopened_.clear();
  auto it = job_index_.find(o.job_id);
  if (it == job_index_.end()) return OutcomeKind::kStale;
  JobState& job = *jobs_[it->second];
  if (o.task_id >= job.table().size()) return OutcomeKind::kStale;
  const TaskKey key{it->second, o.task_id};
  // Only the live attempt counts: the one this worker holds now, under this attempt number.
  // Anything else — a late result of an attempt given up on (its worker was stopped or cut off
  // and declared dead), a result for a task the sender was never sent — is dropped, so it can
  // neither commit nor fail the attempt running elsewhere.
  if (auto gang = running_gangs_.find(key); gang != running_gangs_.end()) {
    if (gang->second.attempt != o.attempt || gang->second.workers.front().first != worker_id) {
      return OutcomeKind::kStale;
    }
    EndGang(key);
    if (WorkerEntry* w = registry_.Find(worker_id)) ++w->tasks_done;
  } else {
    WorkerEntry* w = registry_.Find(worker_id);
    if (w == nullptr || w->inflight.count(key) == 0 ||
        job.attempts(o.task_id) != o.attempt + 1u) {
      return OutcomeKind::kStale;
    }
    w->EndTask(key);
    ++w->tasks_done;
  }
  if (o.host_refused && !o.ok) {
    // Nothing ran: the task goes back as it was, and the job stops sending work there.
    const WorkerEntry* w = registry_.Find(worker_id);
    job.RefuseHost(worker_id, w != nullptr ? w->info.address : "", o.error);
    job.Requeue(o.task_id);
    return OutcomeKind::kRefused;
  }
  if (o.ok) {
    if (!job.Complete(o.task_id)) return OutcomeKind::kDropped;
    job.facts().CountDevice(o.device.empty() ? "cpu" : o.device, o.gpu_requested_but_cpu);
    return OutcomeKind::kCommitted;
  }
  if (job.task_state(o.task_id) != TaskState::kRunning) return OutcomeKind::kDropped;
  // Lineage: what wrote the reduce's missing inputs runs again first, so its retry waits for it.
  if (!o.lost_inputs.empty()) reopened_ = job.ReopenLostInputs(o.task_id, o.lost_inputs);
  job.Fail(o.task_id, {o.error, worker_id, MayRetry(o.error_code),
                       RetryAt(job.attempts(o.task_id)), o.fused_node});
  return job.phase() == JobPhase::kFailed ? OutcomeKind::kFailed : OutcomeKind::kRetrying;
}

std::optional<Scheduler::GangView> Scheduler::FindRunningGang(const std::string& job_id,
                                                          uint64_t task_id) const {
  auto index = job_index_.find(job_id);
  if (index == job_index_.end()) return std::nullopt;
  auto gang = running_gangs_.find({index->second, task_id});
  if (gang == running_gangs_.end() || gang->second.workers.empty()) return std::nullopt;
  return GangView{gang->second.attempt, gang->second.workers};
}

std::vector<std::string> Scheduler::Cancel(const std::string& job_id) {
  std::vector<std::string> holders;
  auto it = job_index_.find(job_id);
  if (it == job_index_.end()) return holders;
  jobs_[it->second]->Cancel();
  std::vector<TaskKey> gangs;
  for (const auto& [key, gang] : running_gangs_) {
    if (key.first != it->second) continue;
    gangs.push_back(key);
    holders.push_back(gang.workers.front().first);  // the leader runs the whole group
  }
  for (const TaskKey& key : gangs) EndGang(key);
  for (auto& [id, w] : registry_.mutable_workers()) {
    std::vector<TaskKey> mine;
    for (const auto& [k, sent] : w.inflight) {
      if (k.first == it->second) mine.push_back(k);
    }
    // Their results will be dropped; the credit and the shares are free now.
    for (const TaskKey& k : mine) w.EndTask(k);
    const bool holds = !mine.empty();
    if (holds && std::find(holders.begin(), holders.end(), id) == holders.end()) {
      holders.push_back(id);
    }
  }
  return holders;
}

wire::JobStatus Scheduler::Status(const JobState& job) const {
  if (job.compacted()) return job.summary();
  const auto index = job_index_.find(job.id());
  return ReportJob(job, registry_, gangs_,
                   index == job_index_.end() ? std::nullopt : std::optional(index->second));
}

void Scheduler::FillPoolStats(wire::CoordinatorStats& stats) const {
  ReportPool(jobs_, registry_, gangs_, stats);
}

std::vector<wire::WorkerStatus> Scheduler::Workers(int64_t now_ms) const {
  return ReportWorkers(registry_, now_ms);
}

}  // namespace coupler::coordinator
