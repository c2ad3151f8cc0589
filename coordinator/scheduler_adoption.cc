// The Scheduler's part that takes work back after a restart or a reconnect: a worker's
// registration keeps the attempts it still holds (adopted) and gives up on the rest; a restored
// job's attempts in flight wait for their workers (AwaitAdoption) until a deadline, sends the
// crash kept from being recorded are kept by their holders, and dealing waits briefly for the
// workers expected back. Part of scheduler.h's class.
#include "coordinator/scheduler.h"

#include <algorithm>
#include <set>

namespace coupler::coordinator {

bool Scheduler::AwaitingHolders(int64_t now_ms) {
  if (hold_dispatch_until_ == 0) return false;
  if (now_ms < hold_dispatch_until_) {
    for (const auto& [key, a] : awaiting_) {
      // Only a worker that has not registered again still has an entry naming it.
      if (!a.worker_id.empty()) return true;
    }
  }
  hold_dispatch_until_ = 0;
  return false;
}

bool Scheduler::AdoptUnrecorded(uint32_t job_index, const wire::TaskAttempt& a, int64_t now_ms) {
  auto until = unrecorded_until_.find(job_index);
  if (until == unrecorded_until_.end()) return false;
  if (now_ms > until->second) {
    unrecorded_until_.erase(until);
    return false;
  }
  JobState& job = *jobs_[job_index];
  if (a.task_id >= job.table().size() || job.table().Describe(a.task_id).kind == TaskKind::kGang) {
    return false;
  }
  return job.AdoptQueued(a.task_id, a.attempt);
}

std::optional<TaskKey> Scheduler::LiveAttempt(const wire::TaskAttempt& a) const {
  auto index = job_index_.find(a.job_id);
  if (index == job_index_.end() || !jobs_[index->second]) return std::nullopt;
  const JobState& job = *jobs_[index->second];
  if (job.finished() || a.task_id >= job.table().size() ||
      job.task_state(a.task_id) != TaskState::kRunning || job.attempts(a.task_id) != a.attempt + 1u) {
    return std::nullopt;
  }
  return TaskKey{index->second, a.task_id};
}

Registration Scheduler::RegisterWorker(const wire::RegisterWorker& info, int64_t now_ms,
                                       const std::string& key_name) {
  const WorkerEntry* before = registry_.Find(info.worker_id);
  const uint32_t slots = before != nullptr ? before->info.slots : 0;
  const bool reconnected = before != nullptr && !before->gone() && before->key_name == key_name;
  HeldTasks held = registry_.Register(info, now_ms);
  Registration out;
  // A worker we still count as alive, registering again: the same process on a new connection
  // (its TCP link was cut and ZeroMQ connected again, so the coordinator did not know the new
  // route). What it reports holding of what we sent it, at the live attempt, is still its own
  // and runs on; only what it no longer holds is lost (it restarted, or the cut swallowed an
  // assignment). Without this, every cut link would stop and re-run its running tasks.
  HeldTasks kept;
  std::map<TaskKey, uint32_t> kept_gangs;  // gangs it leads -> the ranks it runs of each
  std::set<TaskKey> still_held;
  if (reconnected) {
    for (const wire::HeldAttempt& h : info.holding) {
      const std::optional<TaskKey> key = LiveAttempt(h.attempt);
      if (!key) continue;
      if (auto it = held.find(*key); it != held.end()) {
        it->second.started = it->second.started || h.started;
        kept.insert(held.extract(it));
      } else if (auto g = running_gangs_.find(*key);
                 g != running_gangs_.end() && g->second.attempt == h.attempt.attempt &&
                 g->second.workers.front().first == info.worker_id) {
        kept_gangs.emplace(*key, g->second.workers.front().second);
      } else {
        continue;
      }
      still_held.insert(*key);
      out.adopted.push_back(h);
    }
  }
  std::set<TaskKey> keep_gangs;
  for (const auto& [key, ranks] : kept_gangs) keep_gangs.insert(key);
  out.lost = LoseTasks(info.worker_id, std::move(held), slots,
                       "worker " + info.worker_id + " restarted while running the task",
                       keep_gangs);
  WorkerEntry* w = registry_.Find(info.worker_id);
  {
    // In the order they were sent, as its slots take them.
    std::vector<std::pair<HeldTask, TaskKey>> order;
    for (const auto& [key, task] : kept) order.emplace_back(task, key);
    std::sort(order.begin(), order.end(),
              [](const auto& a, const auto& b) { return a.first.sent < b.first.sent; });
    for (const auto& [task, key] : order) {
      const JobState& job = *jobs_[key.first];
      w->StartTask(key, job.gpu_share(job.table().Describe(key.second).plan_node));
      if (task.started) w->MarkStarted(key);
    }
    for (const auto& [key, ranks] : kept_gangs) w->gang_ranks += ranks;
  }
  for (const wire::HeldAttempt& h : info.holding) {
    const wire::TaskAttempt& a = h.attempt;
    if (reconnected) {
      if (const std::optional<TaskKey> key = LiveAttempt(a); key && still_held.count(*key)) {
        continue;
      }
    }
    auto index = job_index_.find(a.job_id);
    std::map<TaskKey, Awaited>::iterator awaited = awaiting_.end();
    if (index != job_index_.end()) awaited = awaiting_.find({index->second, a.task_id});
    JobState* job = index == job_index_.end() ? nullptr : jobs_[index->second].get();
    // Only the worker it was sent to, with the key it had then (rows from before the worker
    // was recorded name none), may take an attempt back.
    if (awaited == awaiting_.end() || awaited->second.attempt != a.attempt || job->finished() ||
        job->task_state(a.task_id) != TaskState::kRunning ||
        (!awaited->second.worker_id.empty() && awaited->second.worker_id != info.worker_id) ||
        (!awaited->second.worker_key.empty() && awaited->second.worker_key != key_name)) {
      if (awaited == awaiting_.end() && job != nullptr && AdoptUnrecorded(index->second, a, now_ms)) {
        const TaskKey key{index->second, a.task_id};
        w->StartTask(key, job->gpu_share(job->table().Describe(a.task_id).plan_node));
        if (h.started) w->MarkStarted(key);
        out.adopted.push_back(h);
        continue;
      }
      out.release.push_back(a);
      continue;
    }
    const uint32_t gang_ranks = awaited->second.gang_ranks;
    awaiting_.erase(awaited);
    const TaskKey key{index->second, a.task_id};
    if (gang_ranks > 0) {
      // A gang whose ranks all run on this worker, its leader: running again as placed, its
      // slots reserved here until its outcome.
      running_gangs_[key] = {a.attempt, {{info.worker_id, gang_ranks}}};
      w->gang_ranks += gang_ranks;
      job->facts().gang_hosts[a.task_id] = {w->info.address};
      out.adopted.push_back(h);
      continue;
    }
    // Held here as if just sent, in the order reported (running ones first): a share of a GPU
    // is counted against this worker's ledger again.
    w->StartTask(key, job->gpu_share(job->table().Describe(a.task_id).plan_node));
    if (h.started) w->MarkStarted(key);
    out.adopted.push_back(h);
  }
  // The worker they were sent to is back and did not report them: they are gone (it restarted,
  // or never got them). They run again now, not after the wait. A worker reporting anything it
  // holds from before is the same process (a new one holds nothing), and that process keeps
  // every attempt it got until its result is acknowledged: it never got these.
  const bool same_process = !info.holding.empty();
  for (auto it = awaiting_.begin(); it != awaiting_.end();) {
    const Awaited& awaited = it->second;
    if (awaited.worker_id.empty() || awaited.worker_id != info.worker_id ||
        (!awaited.worker_key.empty() && awaited.worker_key != key_name)) {
      ++it;
      continue;
    }
    JobState& job = *jobs_[it->first.first];
    if (!job.finished() && job.task_state(it->first.second) == TaskState::kRunning) {
      const LostAttempt gone{job.id(), it->first.second, awaited.attempt, info.worker_id};
      if (same_process) {
        out.undelivered.push_back(gone);
        job.Reissue(it->first.second);
      } else {
        out.abandoned.push_back(gone);
        job.AbandonAdoption(it->first.second);
      }
    }
    it = awaiting_.erase(it);
  }
  return out;
}

std::vector<std::pair<uint64_t, uint32_t>> Scheduler::AwaitAdoption(
    const std::string& job_id, const std::vector<store::SentAttempt>& attempts,
    int64_t deadline_ms, int64_t now_ms) {
  std::vector<std::pair<uint64_t, uint32_t>> abandoned;
  auto index = job_index_.find(job_id);
  if (index == job_index_.end()) {
    for (const store::SentAttempt& a : attempts) abandoned.emplace_back(a.task, a.attempt);
    return abandoned;
  }
  JobState& job = *jobs_[index->second];
  // Sends of the last moments before a crash may not have been recorded: until the deadline, a
  // worker reporting such an attempt keeps it if its task still waits in the queue at that
  // attempt number (RegisterWorker).
  unrecorded_until_[index->second] = deadline_ms;
  hold_dispatch_until_ = std::max(hold_dispatch_until_, std::min(deadline_ms, now_ms + kRestartHoldMs));
  std::vector<uint64_t> loose;
  std::map<uint64_t, const store::SentAttempt*> sent_to;
  for (const store::SentAttempt& a : attempts) {
    // Only the live attempt can be adopted. A gang only when its leader ran every rank itself:
    // ranks on other workers hung off daemons the restart cut, so it is retried from its
    // checkpoint instead.
    if (a.task >= job.table().size() || job.attempts(a.task) != a.attempt + 1u ||
        (job.table().Describe(a.task).kind == TaskKind::kGang &&
         (a.gang_ranks == 0 || a.worker_id.empty() ||
          static_cast<int>(a.gang_ranks) != job.ranks(job.table().Describe(a.task).plan_node)))) {
      abandoned.emplace_back(a.task, a.attempt);
      continue;
    }
    loose.push_back(a.task);
    sent_to[a.task] = &a;
  }
  const std::vector<uint64_t> waiting = job.AwaitAdoption(loose);
  for (const uint64_t task : waiting) {
    const store::SentAttempt& a = *sent_to.at(task);
    awaiting_[{index->second, task}] = {a.attempt, deadline_ms, a.worker_id, a.worker_key,
                                        a.gang_ranks};
  }
  // `waiting` is `loose` less the tasks not running: one pass finds those.
  for (size_t i = 0, w = 0; i < loose.size(); ++i) {
    if (w < waiting.size() && waiting[w] == loose[i]) {
      ++w;
    } else {
      abandoned.emplace_back(loose[i], job.attempts(loose[i]) - 1u);
    }
  }
  std::sort(abandoned.begin(), abandoned.end());
  return abandoned;
}

bool Scheduler::AwaitsAdoption(const std::string& job_id, uint64_t task_id,
                               uint32_t attempt) const {
  auto index = job_index_.find(job_id);
  if (index == job_index_.end()) return false;
  auto it = awaiting_.find({index->second, task_id});
  return it != awaiting_.end() && it->second.attempt == attempt;
}

std::vector<LostAttempt> Scheduler::AbandonUnadopted(int64_t now_ms) {
  std::vector<LostAttempt> abandoned;
  for (auto it = awaiting_.begin(); it != awaiting_.end();) {
    if (it->second.deadline_ms > now_ms) {
      ++it;
      continue;
    }
    JobState& job = *jobs_[it->first.first];
    if (!job.finished() && job.task_state(it->first.second) == TaskState::kRunning) {
      abandoned.push_back({job.id(), it->first.second, it->second.attempt, ""});
      job.AbandonAdoption(it->first.second);
    }
    it = awaiting_.erase(it);
  }
  return abandoned;
}

}  // namespace coupler::coordinator
