// Ledger: everything the coordinator records about its work, as one observer of what happens —
// the state store (durable: what a restart replays), the event log (what people and tools
// read), the metrics (what Prometheus scrapes) and the reuse catalogue (what later runs may
// skip). Each happening is one call here, so a commit, its event and its counter are written
// together and have one home each. The event loop calls it; it decides nothing about jobs
// (the Scheduler does) and answers nobody (JobControl and the loop do).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coordinator/event_log.h"
#include "coordinator/pool_metrics.h"
#include "coordinator/reuse_index.h"
#include "coordinator/scheduler.h"
#include "coordinator/store/state_store.h"
#include "runtime/status.h"
#include "runtime/wire/messages.h"

namespace coupler::coordinator {

class Ledger {
 public:
  // `scheduler`: whose jobs it names (a task's node) and persists the phases of.
  Ledger(std::unique_ptr<store::StateStore> store, EventLogOptions events, Scheduler& scheduler,
         std::string state_dir);

  // Where a node that succeeded is handed to be recorded for reuse (its outputs are listed from
  // disk: off the loop, see AdmissionQueue::Record); unset: nothing is recorded.
  void set_reuse_recorder(std::function<void(ReuseRecord)> record) { record_reuse_ = std::move(record); }

  // ---- a start
  // The records of the jobs that had not finished; counts the others by state (they stay in
  // the store, see CountJobs) and logs coordinator_started with this start's epoch.
  Result<std::vector<store::JobRecord>> Open(uint64_t pid);
  // This start's epoch: the state's commit generation right after the start moved it (every
  // later commit moves it on, so any later start's is higher). Workers learn it at registration.
  uint64_t epoch() const { return epoch_; }
  // A job of an earlier start, restored to run: `on_disk` is its stored state.
  void JobRestored(const JobState& job, std::optional<JobPhase> on_disk);
  // A job of an earlier start that cannot run again (its record is damaged): failed on disk.
  Status JobRestoreFailed(const store::JobRecord& record, const Status& why);

  // ---- jobs
  // A job admitted: its record written (the job may be scheduled once this is OK).
  Status JobAdmitted(const store::JobRecord& record, const JobState& job, const std::string& user);
  // A finished job retried: its record rewritten. `earlier_state`: the state it was counted
  // under when it finished before this start (it joins the live jobs now); empty otherwise.
  Status JobRetried(const store::JobRecord& record, const JobState& job,
                    const std::string& earlier_state);
  void JobCancelled(const std::string& job_id, const std::string& by);
  // Writes the phase of every job whose phase moved since it was last written (a finished job's
  // in the same transaction as its buffered commits), logs the ends, and lets the scheduler
  // release finished jobs' tasks.
  void PersistPhases();
  // Jobs the scheduler let go of (Scheduler::EvictFinished): counted with the state's jobs.
  void JobsEvicted(const std::vector<std::pair<std::string, JobPhase>>& evicted);
  // The phase the store holds for a job this coordinator runs; nullopt for any other.
  std::optional<JobPhase> persisted_phase(const std::string& job_id) const;

  // ---- dispatch
  // Tasks sent to a worker (loose ones): the sent rows (a restart adopts what was in flight),
  // task_assigned events, the queue-wait histogram.
  void Sent(const std::string& worker_id, const std::vector<wire::TaskSpec>& tasks);
  // Attempts the worker gave back unstarted (Scheduler::OnReclaimed), recorded after their
  // sends so a restart replays them as queued, not in flight (store::SentAttempts::returned).
  void Returned(const std::string& worker_id, const std::vector<wire::TaskAttempt>& attempts);
  // A gang placed, sent to its leader.
  void GangSent(const std::string& leader, const wire::TaskSpec& spec);

  // ---- outcomes
  // One reported outcome and what the scheduler made of it. Its acknowledgement waits until
  // what it changed is on disk (TakeDurableAcks).
  void Outcome(const std::string& worker_id, const wire::TaskOutcome& outcome, OutcomeKind kind);
  // Attempts whose worker was lost: each ended "lost", and retried when the scheduler did.
  void Lost(const std::vector<LostAttempt>& lost);
  // Attempts taken from a worker an operator took away (`why`: its key revoked, a ban): each
  // ended "withdrawn", which a restart replays as uncharged (JobState::Reissue).
  void Withdrawn(const std::vector<LostAttempt>& withdrawn, const std::string& why);
  void Adopted(const wire::HeldAttempt& held, const std::string& worker_id);
  void Abandoned(const std::string& job_id, uint64_t task, uint32_t attempt,
                 const std::string& reason);
  uint64_t stale_outcomes() const { return stale_outcomes_; }
  void CountStale(uint64_t n = 1) { stale_outcomes_ += n; }

  // ---- workers
  // A registration: its drain events start over, and the acknowledgements owed to an earlier
  // connection are dropped (it sends again what it still keeps).
  void WorkerJoined(const wire::RegisterWorker& reg);
  // Given up on (silent or revoked); one that finished its drain left on purpose, which is
  // its goodbye, not a loss.
  void WorkerGone(const std::string& worker_id, uint64_t tasks);
  // A worker started draining (`by`: "admin", "stop", "worker"): logged once per registration.
  void WorkerDraining(const std::string& worker_id, std::string_view by);
  void WorkerDrained(const std::string& worker_id);
  bool drained(const std::string& worker_id) const;

  // ---- durability
  // Persists phases and writes what is buffered when `flush_every_ms` passed (while the store
  // fails: once a second).
  void Tick(int64_t now_ms, int64_t flush_every_ms);
  // Writes everything buffered now (what a client is told is done is on disk).
  void Flush(int64_t now_ms);
  // Per worker, the attempts whose outcomes are on disk now; empty while anything is buffered.
  std::vector<std::pair<std::string, std::vector<wire::TaskAttempt>>> TakeDurableAcks();
  // The last write's failure; OK while the store writes. While it fails, nothing is dispatched.
  const Status& store_error() const { return store_error_; }
  bool writable() const { return store_error_.ok(); }
  // Remembers whether the store could write; logs the first failure and the recovery.
  void NoteStoreResult(const Status& s);

  // ---- reading
  store::StateStore& store() { return *store_; }
  // Every job the coordinator and its state know, by state (the jobs gauge).
  std::map<std::string, uint64_t> CountJobs() const;
  const PoolMetrics& metrics() const { return metrics_; }
  // The event log's name for a task's attempt (its node from the job's plan).
  TaskEventRef EventRef(const std::string& job_id, uint64_t task, uint32_t attempt) const;
  // Remembers when nodes of `job` became ready (for the queue-wait histograms).
  void StampReadyNodes(const JobState& job);

 private:
  // Buffers the counters that changed, to be written with the next flush's rows.
  void StageCounters();
  // A failed attempt's events: task_failed with its cause (coupler_task_failures_total), and
  // task_retried when the scheduler re-queued it (coupler_task_retries_total, same cause).
  void Failure(const TaskEventRef& ref, const std::string& worker_id, const std::string& reason,
               RetryReason cause);
  // The map tasks the scheduler ran again for a reduce's lost inputs (Scheduler::reopened):
  // each one's commit revoked and its attempt recorded output_lost, task_retried events.
  void OutputsLost(const wire::TaskOutcome& o, const std::string& worker_id);
  // A node of `job` finished by running: its outputs become reusable (reuse_index.h).
  // Handed to the recorder; the walk of its folder and the write happen there.
  void RecordReusable(const JobState& job, uint32_t plan_node);
  // Into `histogram`: how long a first attempt of `task`, sent at `now_ms`, waited since its
  // node became ready.
  void ObserveQueueWait(const JobState& job, uint64_t task, int64_t now_ms, Histogram& histogram) const;

  std::unique_ptr<store::StateStore> store_;
  EventLog events_;
  Scheduler& scheduler_;
  std::string state_dir_;
  std::function<void(ReuseRecord)> record_reuse_;
  PoolMetrics metrics_;
  uint64_t epoch_ = 0;
  Status store_error_;
  int64_t last_flush_ms_ = 0;
  uint64_t stale_outcomes_ = 0;
  // The phase on disk of each job this coordinator runs.
  std::map<std::string, JobPhase> persisted_phase_;
  // Jobs that had finished before this start stay in the state, not in memory: a coordinator
  // over 100,000 finished jobs holds what one over none does. Only their counts are kept.
  std::map<std::string, uint64_t> earlier_jobs_;
  // Per worker: the attempts whose outcomes it sent, acknowledged once the store wrote them.
  std::unordered_map<std::string, std::vector<wire::TaskAttempt>> pending_acks_;
  // The drain events logged for each worker's current registration.
  enum class DrainLogged : uint8_t { kDraining, kDrained };
  std::unordered_map<std::string, DrainLogged> drain_logged_;
  // Per job, per plan node: when it became ready (Unix ms), 0 while it is not.
  std::unordered_map<std::string, std::vector<int64_t>> node_ready_ms_;
};

// Unix epoch ms, for records.
int64_t WallClockMs();

}  // namespace coupler::coordinator
