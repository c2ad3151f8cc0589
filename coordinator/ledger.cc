#include "coordinator/ledger.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "runtime/logging.h"

namespace coupler::coordinator {
namespace {

constexpr int64_t kStoreRetryMs = 1000;
// The registry's counter, kept beside PoolMetrics' own.
constexpr const char* kWorkersLostCounter = "workers_lost";

}  // namespace

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Ledger::Ledger(std::unique_ptr<store::StateStore> store, EventLogOptions events,
               Scheduler& scheduler, std::string state_dir)
    : store_(std::move(store)),
      events_(std::move(events)),
      scheduler_(scheduler),
      state_dir_(std::move(state_dir)) {}

Result<std::vector<store::JobRecord>> Ledger::Open(uint64_t pid) {
  // Finished jobs stay what their row says, in the store: not re-validated (their inputs may
  // be gone), not loaded. Only unfinished ones are restored to run.
  COUPLER_ASSIGN_OR_RETURN(auto records, store_->LoadUnfinishedJobs());
  COUPLER_ASSIGN_OR_RETURN(earlier_jobs_, store_->CountJobsByState());
  // The counters go on from what the state kept, not from 0 (written with each flush).
  COUPLER_ASSIGN_OR_RETURN(const auto counters, store_->LoadCounters());
  metrics_.RestoreCounters(counters);
  if (auto lost = counters.find(kWorkersLostCounter); lost != counters.end()) {
    scheduler_.registry().RestoreWorkersLostTotal(lost->second);
  }
  for (const auto& rec : records) {
    if (auto n = earlier_jobs_.find(rec.state); n != earlier_jobs_.end() && n->second > 0) --n->second;
  }
  // The start first, then what it found: the abandoned attempts that follow read as its doing.
  epoch_ = store_->generation();
  events_.CoordinatorStarted(epoch_, pid, records.size());
  return records;
}

void Ledger::JobRestored(const JobState& job, std::optional<JobPhase> on_disk) {
  // What the store says, so a job whose last commits landed just before a crash (all done,
  // state still "running" on disk) gets its final state written by PersistPhases.
  persisted_phase_[job.id()] = on_disk == JobPhase::kRunning ? JobPhase::kRunning : JobPhase::kQueued;
  StampReadyNodes(job);
}

Status Ledger::JobRestoreFailed(const store::JobRecord& record, const Status& why) {
  const std::string failed_state(JobPhaseName(JobPhase::kFailed));
  COUPLER_RETURN_IF_ERROR(store_->SetJobState(record.id, failed_state, why.message(), WallClockMs()));
  events_.JobFinished(record.id, failed_state, std::string(why.message()));
  ++earlier_jobs_[failed_state];
  return Status::Ok();
}

Status Ledger::JobAdmitted(const store::JobRecord& record, const JobState& job,
                           const std::string& user) {
  Status stored = store_error_.ok() ? store_->PutJob(record) : store_error_;
  NoteStoreResult(stored);
  if (!stored.ok()) return stored;
  persisted_phase_[record.id] = JobPhase::kQueued;
  ++metrics_.jobs_submitted;
  StampReadyNodes(job);
  events_.JobSubmitted(record.id, record.name, user, job.table().size());
  return Status::Ok();
}

Status Ledger::JobRetried(const store::JobRecord& record, const JobState& job,
                          const std::string& earlier_state) {
  if (Status s = store_->PutJob(record); !s.ok()) {
    NoteStoreResult(s);
    return s;
  }
  persisted_phase_[record.id] = job.phase();
  if (!earlier_state.empty()) {
    // Finished before this start: counted with the state's jobs until now.
    if (auto n = earlier_jobs_.find(earlier_state); n != earlier_jobs_.end() && n->second > 0) {
      --n->second;
    }
  }
  StampReadyNodes(job);
  return Status::Ok();
}

void Ledger::JobCancelled(const std::string& job_id, const std::string& by) {
  events_.JobCancelled(job_id, by);
}

void Ledger::JobsEvicted(const std::vector<std::pair<std::string, JobPhase>>& evicted) {
  for (const auto& [id, phase] : evicted) {
    ++earlier_jobs_[std::string(JobPhaseName(phase))];
    persisted_phase_.erase(id);
  }
}

std::optional<JobPhase> Ledger::persisted_phase(const std::string& job_id) const {
  auto it = persisted_phase_.find(job_id);
  if (it == persisted_phase_.end()) return std::nullopt;
  return it->second;
}

void Ledger::PersistPhases() {
  std::vector<std::string> released;
  for (const auto& job : scheduler_.jobs()) {
    if (!job) continue;  // evicted: its end was on disk before
    JobPhase& persisted = persisted_phase_[job->id()];
    if (persisted == job->phase()) continue;
    const bool finished = job->finished();
    // SetJobState writes the buffered commits in the same transaction, so a job is never
    // on disk as finished without the commits that finished it.
    if (finished && job->facts().finished_ms == 0) job->facts().finished_ms = WallClockMs();
    store::JobCounts counts;
    counts.tasks_total = job->table().size();
    counts.tasks_done = job->done();
    counts.tasks_failed = job->failed();
    counts.attempts = job->total_attempts();
    // The counters (this job's end counted) go in the same transaction as the phase: staged
    // after it, they were a second commit for every job that finished.
    uint64_t* finished_counter =
        finished ? &metrics_.jobs_finished[std::string(JobPhaseName(job->phase()))] : nullptr;
    if (finished_counter != nullptr) ++*finished_counter;
    StageCounters();
    Status s = store_->SetJobState(job->id(), std::string(JobPhaseName(job->phase())), job->error(),
                                   finished ? job->facts().finished_ms : 0, counts);
    NoteStoreResult(s);
    if (!s.ok()) {
      if (finished_counter != nullptr) --*finished_counter;  // not finished on disk: not counted
      break;  // still the old phase on disk: status keeps saying so
    }
    persisted = job->phase();
    if (!finished) continue;
    node_ready_ms_.erase(job->id());
    Logger("coordinator")->info("job {} {}: {} of {} tasks, {} attempts{}", job->id(),
                                JobPhaseName(job->phase()), job->done(), job->table().size(),
                                job->total_attempts(),
                                job->error().empty() ? "" : " — " + job->error());
    events_.JobFinished(job->id(), JobPhaseName(job->phase()), job->error());
    released.push_back(job->id());
  }
  // After the walk: releasing may compact the scheduler's job list.
  for (const std::string& id : released) scheduler_.ReleaseFinished(id);
}

void Ledger::Returned(const std::string& worker_id,
                      const std::vector<wire::TaskAttempt>& attempts) {
  store::SentAttempts batch;
  batch.returned = true;
  for (const wire::TaskAttempt& a : attempts) {
    if (a.job_id != batch.job_id && !batch.tasks.empty()) {
      store_->AddSent(std::move(batch));
      batch = {};
      batch.returned = true;
    }
    batch.worker_id = worker_id;
    batch.job_id = a.job_id;
    batch.tasks.emplace_back(a.task_id, a.attempt);
  }
  if (!batch.tasks.empty()) store_->AddSent(std::move(batch));
}

void Ledger::Sent(const std::string& worker_id, const std::vector<wire::TaskSpec>& tasks) {
  // One row per job in the message, buffered with the commits: a restart then knows every
  // attempt that was in flight, and where (cheap enough to keep dispatch at full speed).
  const WorkerEntry* worker = scheduler_.registry().Find(worker_id);
  const std::string key = worker != nullptr ? worker->key_name : std::string();
  store::SentAttempts batch;
  batch.worker_id = worker_id;
  batch.worker_key = key;
  // Looked up once per job in the message, not per task: this runs for every task sent.
  const JobState* job = nullptr;
  const int64_t now = WallClockMs();
  for (const wire::TaskSpec& t : tasks) {
    if (t.job_id != batch.job_id && !batch.tasks.empty()) {
      store_->AddSent(std::move(batch));
      batch = {};
      batch.worker_id = worker_id;
      batch.worker_key = key;
    }
    if (job == nullptr || job->id() != t.job_id) job = scheduler_.FindJob(t.job_id);
    if (job != nullptr && t.attempt == 0) ObserveQueueWait(*job, t.task_id, now, metrics_.task_queue_wait);
    batch.job_id = t.job_id;
    batch.tasks.emplace_back(t.task_id, t.attempt);
    const std::vector<std::string>* fused =
        job != nullptr && !t.fused.empty()
            ? &job->fused_after_ids(job->table().Describe(t.task_id).plan_node)
            : nullptr;
    events_.TaskAssigned({t.job_id, t.node_id, t.task_id, t.attempt, fused}, worker_id);
  }
  if (!batch.tasks.empty()) store_->AddSent(std::move(batch));
}

void Ledger::GangSent(const std::string& leader, const wire::TaskSpec& spec) {
  if (const JobState* job = scheduler_.FindJob(spec.job_id); job != nullptr && spec.attempt == 0) {
    ObserveQueueWait(*job, spec.task_id, WallClockMs(), metrics_.gang_wait);
  }
  events_.GangPlaced({spec.job_id, spec.node_id, spec.task_id, spec.attempt, nullptr}, leader,
                     spec.gang_hosts);
  const WorkerEntry* lead = scheduler_.registry().Find(leader);
  // The leader comes first in the reservation: its ranks are the first count.
  store_->AddSent({spec.job_id, {{spec.task_id, spec.attempt}}, leader,
                   lead != nullptr ? lead->key_name : std::string(),
                   spec.gang_ranks.empty() ? 0u : spec.gang_ranks.front()});
}

void Ledger::Outcome(const std::string& worker_id, const wire::TaskOutcome& o, OutcomeKind kind) {
  pending_acks_[worker_id].push_back({o.job_id, o.task_id, o.attempt});
  switch (kind) {
    case OutcomeKind::kRefused:
      Logger("coordinator")->warn("job {}: worker {} gets none of its tasks from now on: {}",
                                  o.job_id, worker_id, o.error);
      return;
    case OutcomeKind::kStale:
      ++stale_outcomes_;
      Logger("coordinator")->debug("dropped an outcome of job {} task {} attempt {} from {}: "
                                   "not the live attempt", o.job_id, o.task_id, o.attempt, worker_id);
      return;
    case OutcomeKind::kDropped:
      return;
    case OutcomeKind::kCommitted: {
      store_->AddCommit({o.job_id, o.task_id, o.attempt, o.output_paths, o.rows_in, o.rows_out,
                         o.device, o.kernel_ms, o.bytes_processed, worker_id});
      metrics_.task_duration.Observe(o.wall_ms / 1000.0);
      if (o.gpu_requested_but_cpu) ++metrics_.gpu_fallback_tasks;
      uint64_t committed = 1;
      // The commit that finishes a node may make the nodes reading it ready.
      if (const JobState* job = scheduler_.FindJob(o.job_id);
          job != nullptr && o.task_id < job->table().size()) {
        // A fused chain's task finished its nodes' shards together (JobState::Complete): each
        // is a task done, as the job counts them.
        const TaskRef ref = job->table().Describe(o.task_id);
        committed += ref.kind == TaskKind::kMap ? job->fused_after_ids(ref.plan_node).size() : 0;
        bool stamped = false;
        for (size_t node = ref.plan_node; node != SIZE_MAX; node = job->fused_next(node)) {
          if (job->node_done(node) != job->table().task_count(node)) continue;
          if (!stamped) StampReadyNodes(*job);
          stamped = true;
          RecordReusable(*job, static_cast<uint32_t>(node));
        }
      }
      metrics_.tasks_done += committed;
      events_.TaskDone(EventRef(o.job_id, o.task_id, o.attempt), worker_id,
                       {o.wall_ms, o.kernel_ms, o.bytes_processed});
      return;
    }
    case OutcomeKind::kRetrying:
    case OutcomeKind::kFailed:
      store_->AddAttempt({o.job_id, o.task_id, o.attempt, worker_id, "failed", o.error, WallClockMs()});
      metrics_.task_duration.Observe(o.wall_ms / 1000.0);
      ++metrics_.tasks_failed;
      Logger("coordinator")->warn("job {} task {} attempt {} failed on {}: {}", o.job_id,
                                  o.task_id, o.attempt, worker_id, o.error);
      Failure(EventRef(o.job_id, o.task_id, o.attempt), worker_id, o.error,
              FailureCause(o.error_code));
      OutputsLost(o, worker_id);
      return;
  }
}

void Ledger::Lost(const std::vector<LostAttempt>& lost) {
  for (const auto& l : lost) {
    const std::string reason = "worker " + l.worker_id + " was lost";
    store_->AddAttempt({l.job_id, l.task_id, l.attempt, l.worker_id, "lost", reason, WallClockMs()});
    Failure(EventRef(l.job_id, l.task_id, l.attempt), l.worker_id, reason, RetryReason::kWorkerLost);
  }
  if (!lost.empty()) {
    Logger("coordinator")->warn("{} task(s) re-queued from lost worker {}", lost.size(),
                                lost.front().worker_id);
  }
}

void Ledger::Withdrawn(const std::vector<LostAttempt>& withdrawn, const std::string& why) {
  for (const auto& l : withdrawn) {
    store_->AddAttempt({l.job_id, l.task_id, l.attempt, l.worker_id, std::string(store::kWithdrawnOutcome),
                        why, WallClockMs()});
    events_.AttemptAbandoned(EventRef(l.job_id, l.task_id, l.attempt), why);
  }
}

void Ledger::Adopted(const wire::HeldAttempt& held, const std::string& worker_id) {
  events_.AttemptAdopted(EventRef(held.attempt.job_id, held.attempt.task_id, held.attempt.attempt),
                         worker_id, held.started);
}

void Ledger::Abandoned(const std::string& job_id, uint64_t task, uint32_t attempt,
                       const std::string& reason) {
  events_.AttemptAbandoned(EventRef(job_id, task, attempt), reason);
}

void Ledger::OutputsLost(const wire::TaskOutcome& o, const std::string& worker_id) {
  const JobState* job = scheduler_.FindJob(o.job_id);
  if (job == nullptr) return;
  for (const uint64_t map : scheduler_.reopened()) {
    // The attempt that committed it: its commit goes (a restart must not count the task done)
    // and an attempt row says why, which a restart replays as uncharged.
    const uint32_t committed = job->attempts(map) - 1;
    const std::string why = fmt::format("its output, input of reduce task {} (attempt {} on {}), "
                                        "is missing: it runs again", o.task_id, o.attempt, worker_id);
    store_->RevokeCommit(o.job_id, map);
    store_->AddAttempt({o.job_id, map, committed, "", std::string(store::kOutputLostOutcome), why,
                        WallClockMs()});
    metrics_.CountRetry(RetryReason::kOutputLost);
    const TaskEventRef ref = EventRef(o.job_id, map, committed);
    events_.TaskRetried({ref.job, ref.node, ref.task, committed + 1, ref.fused},
                        RetryReasonName(RetryReason::kOutputLost), why);
    Logger("coordinator")->warn("job {} task {} ({}) runs again: {}", o.job_id, map, ref.node, why);
  }
}

void Ledger::Failure(const TaskEventRef& ref, const std::string& worker_id,
                     const std::string& reason, RetryReason cause) {
  events_.TaskFailed(ref, worker_id, reason, RetryReasonName(cause));
  metrics_.CountFailure(cause);
  const JobState* job = scheduler_.FindJob(std::string(ref.job));
  // Whether it runs again is what the scheduler did with it: re-queued (ready) or not.
  // Blocked: a reduce that waits for map tasks running again to rebuild its input (lineage).
  if (job == nullptr || ref.task >= job->table().size() ||
      (job->task_state(ref.task) != TaskState::kReady &&
       job->task_state(ref.task) != TaskState::kBlocked)) {
    return;
  }
  metrics_.CountRetry(cause);
  events_.TaskRetried({ref.job, ref.node, ref.task, job->attempts(ref.task), ref.fused}, RetryReasonName(cause),
                      reason);
}

void Ledger::WorkerJoined(const wire::RegisterWorker& reg) {
  pending_acks_.erase(reg.worker_id);  // it sends again what it still keeps
  drain_logged_.erase(reg.worker_id);  // a new registration: its drain is yet to come
  events_.WorkerJoined(reg.worker_id, reg.host, reg.address, reg.slots, reg.gpus.size());
}

void Ledger::WorkerGone(const std::string& worker_id, uint64_t tasks) {
  auto drained = drain_logged_.find(worker_id);
  if (drained == drain_logged_.end() || drained->second != DrainLogged::kDrained) {
    events_.WorkerLost(worker_id, tasks);
  }
  if (drained != drain_logged_.end()) drain_logged_.erase(drained);
}

void Ledger::WorkerDraining(const std::string& worker_id, std::string_view by) {
  const WorkerEntry* w = scheduler_.registry().Find(worker_id);
  // Drained too: a worker idle when it is told to drain is drained by its first beat.
  if (w == nullptr || (w->state != WorkerState::kDraining && w->state != WorkerState::kDrained)) return;
  if (drain_logged_.emplace(worker_id, DrainLogged::kDraining).second) {
    events_.WorkerDraining(worker_id, by);
  }
}

void Ledger::WorkerDrained(const std::string& worker_id) {
  DrainLogged& logged = drain_logged_[worker_id];
  if (logged == DrainLogged::kDrained) return;
  logged = DrainLogged::kDrained;
  events_.WorkerDrained(worker_id);
}

bool Ledger::drained(const std::string& worker_id) const {
  auto it = drain_logged_.find(worker_id);
  return it != drain_logged_.end() && it->second == DrainLogged::kDrained;
}

void Ledger::Tick(int64_t now_ms, int64_t flush_every_ms) {
  // While the store cannot write (a full disk), retry now and then rather than every loop.
  const int64_t every = store_error_.ok() ? flush_every_ms : kStoreRetryMs;
  if (now_ms - last_flush_ms_ < every) return;
  PersistPhases();
  StageCounters();
  if (store_->pending() > 0 || events_.pending_bytes() > 0) Flush(now_ms);
}

void Ledger::StageCounters() {
  std::map<std::string, uint64_t> counters = metrics_.Counters();
  counters[kWorkersLostCounter] = scheduler_.registry().workers_lost_total();
  store_->SetCounters(counters);
}

void Ledger::Flush(int64_t now_ms) {
  last_flush_ms_ = now_ms;
  StageCounters();
  if (store_->pending() > 0) NoteStoreResult(store_->Flush());
  // After the state the events describe is durable; one write per flush, never one per event.
  // A failure is the log's to report: it never holds up dispatch.
  (void)events_.Flush();
}

std::vector<std::pair<std::string, std::vector<wire::TaskAttempt>>> Ledger::TakeDurableAcks() {
  std::vector<std::pair<std::string, std::vector<wire::TaskAttempt>>> acks;
  // Only once everything buffered is written: an outcome's commit (or failure) is then on disk.
  if (pending_acks_.empty() || store_->pending() > 0 || !store_error_.ok()) return acks;
  for (auto& [worker_id, attempts] : pending_acks_) {
    if (!attempts.empty()) acks.emplace_back(worker_id, std::move(attempts));
  }
  pending_acks_.clear();
  return acks;
}

void Ledger::NoteStoreResult(const Status& s) {
  auto log = Logger("coordinator");
  if (s.ok()) {
    if (!store_error_.ok()) {
      log->warn("the state store writes again: dispatch resumes");
      store_error_ = Status::Ok();
    }
    return;
  }
  if (store_error_.ok()) {
    // Once, not at every retry: the operator needs the cause, not a flood.
    log->error("cannot write the state: {}; no new task is dispatched and nothing is reported "
               "finished until it can (free space in {})",
               s.message(), state_dir_);
  }
  store_error_ = s;
}

std::map<std::string, uint64_t> Ledger::CountJobs() const {
  std::map<std::string, uint64_t> counts = earlier_jobs_;
  for (const auto& job : scheduler_.jobs()) {
    if (job) ++counts[std::string(JobPhaseName(job->phase()))];
  }
  return counts;
}

TaskEventRef Ledger::EventRef(const std::string& job_id, uint64_t task, uint32_t attempt) const {
  const JobState* job = scheduler_.FindJob(job_id);
  if (job == nullptr || task >= job->table().size()) return {job_id, "", task, attempt, nullptr};
  const TaskRef ref = job->table().Describe(task);
  const std::vector<std::string>& fused = job->fused_after_ids(ref.plan_node);
  return {job_id, job->plan().nodes[ref.plan_node].id, task, attempt,
          ref.kind == TaskKind::kMap && !fused.empty() ? &fused : nullptr};
}

void Ledger::StampReadyNodes(const JobState& job) {
  std::vector<int64_t>& stamps = node_ready_ms_[job.id()];
  const size_t nodes = job.plan().nodes.size();
  if (stamps.size() != nodes) stamps.assign(nodes, 0);
  const int64_t now = WallClockMs();
  for (size_t p = 0; p < nodes; ++p) {
    if (stamps[p] == 0 && job.node_released(p)) stamps[p] = now;
  }
}

void Ledger::ObserveQueueWait(const JobState& job, uint64_t task, int64_t now_ms,
                              Histogram& histogram) const {
  auto it = node_ready_ms_.find(job.id());
  if (it == node_ready_ms_.end()) return;
  const std::vector<int64_t>& stamps = it->second;
  const uint32_t p = job.table().Describe(task).plan_node;
  if (p >= stamps.size() || stamps[p] == 0) return;
  histogram.Observe(static_cast<double>(std::max<int64_t>(0, now_ms - stamps[p])) / 1000.0);
}

void Ledger::RecordReusable(const JobState& job, uint32_t plan_node) {
  const std::string& key = job.facts().node_key(plan_node);
  // A node whose shards stayed in memory (a fused chain's) has no outputs to offer.
  if (!record_reuse_ || key.empty() || job.facts().node_reused(plan_node) ||
      job.plan().nodes[plan_node].output_in_memory || job.graph().workdir_root.empty()) {
    return;
  }
  record_reuse_({job.graph().workdir_root, key, job.graph().workdir, job.id(),
                 job.plan().nodes[plan_node].id});
}

}  // namespace coupler::coordinator
