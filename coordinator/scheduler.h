// Scheduler: every job and every worker, and the decisions between them — which tasks go to
// which worker (credit-based, round robin across jobs of the highest priority), where gangs of
// tight nodes run (all ranks at once), what a result means (commit once, retry, fail the job),
// what a lost worker costs. Pure logic: the event loop does the sockets and the disk.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coordinator/placement/gang_reservations.h"
#include "coordinator/job_state.h"
#include "coordinator/retry_policy.h"
#include "coordinator/store/records.h"
#include "coordinator/worker_registry.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator {

// What became of a reported outcome, for the event loop to persist.
enum class OutcomeKind {
  kCommitted,  // first finished attempt: record it
  kRetrying,   // failed, re-queued
  kFailed,     // failed for good: the job failed
  kDropped,    // the live attempt, but the task or job had already ended
  kStale,      // not the live attempt, or not from the worker holding it: ignored, counted
  kRefused,    // the worker cannot run the job's tasks (host_refused): re-queued uncharged
};

// An attempt that ended without a result: its worker died or left.
struct LostAttempt {
  std::string job_id;
  uint64_t task_id = 0;
  uint32_t attempt = 0;
  std::string worker_id;
};

// What a registration did: the tasks an earlier registration of the id held (lost), and of the
// attempts the worker reported holding, those adopted and those it must let go (release).
struct Registration {
  std::vector<LostAttempt> lost;
  std::vector<wire::HeldAttempt> adopted;
  std::vector<wire::TaskAttempt> release;
  // Attempts awaited from this worker (sent before a restart) that it did not report: they run
  // again now, under a new number. `abandoned` when it holds nothing from before: it may have
  // restarted, the task perhaps what stopped it, so the attempt is charged. `undelivered` when
  // it holds others: the same process, which never got these (the dead coordinator's send
  // queue kept them), so they are not charged (JobState::Reissue).
  std::vector<LostAttempt> abandoned;
  std::vector<LostAttempt> undelivered;
};

class Scheduler {
 public:
  // A gang's partial hold on slots is given back after gang_hold_timeout_ms.
  explicit Scheduler(int64_t worker_timeout_ms, int64_t gang_hold_timeout_ms = 30'000)
      : registry_(worker_timeout_ms), gangs_(gang_hold_timeout_ms) {}

  // Failed attempts' back-off (retry_policy.h), timed by `clock` (ms, the event loop's steady
  // clock; a test's fake). Until set, retries start at once.
  void SetRetryPolicy(RetryPolicy policy, std::function<int64_t()> clock) {
    retry_ = policy;
    clock_ = std::move(clock);
  }
  // Retries whose back-off has ended go back to their queues. Assign does it too; the event
  // loop calls it before asking HasDispatchableWork.
  void ReleaseDueRetries();

  void AddJob(std::unique_ptr<JobState> job);
  JobState* FindJob(const std::string& id);
  const JobState* FindJob(const std::string& id) const;
  // Every job held, by index; an evicted job's entry is null (EvictFinished).
  const std::vector<std::unique_ptr<JobState>>& jobs() const { return jobs_; }

  WorkerRegistry& registry() { return registry_; }
  const WorkerRegistry& registry() const { return registry_; }
  // Registration; tasks a same-named earlier incarnation held are treated as lost. Of what the
  // worker reports holding (info.holding), each attempt awaiting adoption that was sent to this
  // worker id with this key (`key_name`, its connection's) is adopted: held by this worker from
  // now on, as if just sent (started as reported), so its result commits. Everything else it
  // holds is not its to run any more: released. Attempts awaited from this worker id that it
  // does not report are abandoned at once.
  Registration RegisterWorker(const wire::RegisterWorker& info, int64_t now_ms,
                              const std::string& key_name = "");

  // After a restart: the attempts of `job_id` (added already) that were sent and had not ended
  // when the coordinator stopped, from its store, with the worker each went to. Each loose task
  // whose live attempt that is waits, running and held by nobody, for its worker to report it
  // (adopted at its registration) until `deadline_ms`. Returns the attempts that cannot wait
  // (gangs: their ranks cannot be rejoined; tasks not running any more): they are abandoned
  // now, and run again.
  std::vector<std::pair<uint64_t, uint32_t>> AwaitAdoption(
      const std::string& job_id, const std::vector<store::SentAttempt>& attempts,
      int64_t deadline_ms, int64_t now_ms = 0);
  // Right after a restart, dealing waits (at most kRestartHoldMs) until every worker named by
  // an attempt in flight has registered again: the tasks at the front of the queues include
  // sends the crash kept from being recorded, which their holders adopt when they come back
  // (AdoptUnrecorded); dealt to another worker first, they would run twice.
  bool AwaitingHolders(int64_t now_ms);
  static constexpr int64_t kRestartHoldMs = 3000;
  // The attempts no worker reported by their deadline: abandoned, their tasks ready again
  // (worker_id empty).
  std::vector<LostAttempt> AbandonUnadopted(int64_t now_ms);
  size_t awaiting_adoption() const { return awaiting_.size(); }
  // Is this attempt waiting for its worker to report it?
  bool AwaitsAdoption(const std::string& job_id, uint64_t task_id, uint32_t attempt) const;
  // Workers silent past the timeout, and what their tasks became.
  std::vector<LostAttempt> ReapSilentWorkers(int64_t now_ms);
  // A worker gone without a drain (given up on now): lost, and so are the tasks it held.
  // `withdrawn`: taken away by an operator (its key revoked, a ban), no fault of its tasks':
  // the attempts it ran go back ready under new numbers, charged to no task's `retries`.
  std::vector<LostAttempt> RemoveWorker(const std::string& id, int64_t now_ms,
                                        bool withdrawn = false);

  // Up to the worker's credit of tasks (and at most `limit`), marked running on it.
  std::vector<wire::TaskSpec> Assign(const std::string& worker_id, uint32_t limit = UINT32_MAX);
  // Deals the ready tasks out to every worker with credit (in registry order), in rounds of an
  // even share each, rather than one worker's whole credit first: a stage of fewer tasks than
  // the pool's credit then splits evenly instead of queueing on the first worker while the
  // others idle. The workers that got tasks, with their tasks, in messages of at most
  // kMaxTasksPerAssignment each (a worker may have several).
  std::vector<std::pair<std::string, std::vector<wire::TaskSpec>>> AssignBalanced();
  // One assignment's tasks: its spec vector (~450 bytes a spec) and its encoded message stay
  // below the 128 KiB the coordinator's malloc maps on its own (admission_queue.cc). A whole
  // prefetch (thousands of tasks) in one message mapped and unmapped ~1 MiB of fresh pages per
  // dispatch: a fifth of the loop's time went to page faults. A worker starts the first
  // message's tasks while the next ones are encoded, too.
  static constexpr uint32_t kMaxTasksPerAssignment = 128;
  // Any worker with credit and any job with ready work?
  bool HasDispatchableWork() const;

  // Reserves slots for ready gangs (see GangReservations) and starts those that have all
  // their ranks: each goes to its leader worker, the spec naming every reserved host and its
  // ranks. The other reserved workers run nothing for it; their slots stay taken until the
  // gang's outcome arrives. Call before Assign, so held slots are not given to loose tasks.
  std::vector<std::pair<std::string, wire::TaskSpec>> PlaceGangs(int64_t now_ms);

  // The longest partial gang hold so far (see GangReservations).
  int64_t longest_partial_hold_ms() const { return gangs_.longest_partial_hold_ms(); }

  OutcomeKind OnOutcome(const std::string& worker_id, const wire::TaskOutcome& outcome);
  // The map tasks the last OnOutcome made ready again because its reduce lost their outputs
  // (JobState::ReopenLostInputs): the ledger revokes their commits.
  const std::vector<uint64_t>& reopened() const { return reopened_; }
  // The worker reports these attempts running (its heartbeat): losing it now charges them.
  void MarkStarted(const std::string& worker_id, const std::vector<wire::TaskAttempt>& running);
  // A heartbeat: the attempts it runs, whether it drains, and, for a draining worker that
  // runs and holds nothing, its goodbye (it becomes drained and its slots leave the pool):
  // true then.
  bool OnHeartbeat(const std::string& worker_id, const wire::Heartbeat& beat, int64_t now_ms);

  // The event loop has `job_id`'s end on disk. A big finished job (see kDetailedNodes) keeps
  // only its summary from then on (JobState::Compact), as soon as no worker holds a task of
  // it (a failed job's other tasks may still be out: checked again at every reap), and the
  // freed memory goes back to the system.
  void ReleaseFinished(const std::string& job_id);
  // A finished job keeps its per-node status lines while it has at most this many plan nodes
  // (and its spec's description is small); a bigger one keeps its totals and its failed nodes.
  static constexpr size_t kDetailedNodes = 1000;

  // Finished jobs beyond the newest `keep` (in the order their ends were released), and those
  // that finished before `finished_before_ms` (Unix ms; 0: no age limit), leave memory once no
  // worker holds a task of theirs: a pool that runs jobs for months holds what one that ran
  // `keep` does, and the store answers for the rest. Returns the ids and phases evicted.
  std::vector<std::pair<std::string, JobPhase>> EvictFinished(size_t keep,
                                                              int64_t finished_before_ms = 0);

  // Queued work moves to idle workers. While nothing ready can be sent, and a worker has slots
  // running nothing, the attempts waiting unstarted behind busy slots elsewhere (prefetched,
  // that an idle worker could run) are asked back: per holding worker, what to name in a
  // Reclaim, at most as many as the idle slots, the latest sent first. Each attempt is asked
  // for once.
  std::vector<std::pair<std::string, std::vector<wire::TaskAttempt>>> PlanReclaims();
  // The worker dropped these without starting them (Reclaimed): ready again under the same
  // attempt numbers, uncharged (JobState::Requeue). One it does not hold unstarted any more is
  // left as it is. Returns those that went back (to be recorded: Ledger::Returned).
  std::vector<wire::TaskAttempt> OnReclaimed(const std::string& worker_id,
                                             const std::vector<wire::TaskAttempt>& released);

  // Cancels a job. Returns the workers holding its tasks, to be told to abandon them.
  std::vector<std::string> Cancel(const std::string& job_id);

  // What status reports show of this state (status_report.h does the rendering).
  wire::JobStatus Status(const JobState& job) const;
  void FillPoolStats(wire::CoordinatorStats& stats) const;
  std::vector<wire::WorkerStatus> Workers(int64_t now_ms) const;

  // A running gang's attempt: its workers (leader first), for the launch relay.
  struct GangView {
    uint32_t attempt = 0;
    std::vector<std::pair<std::string, uint32_t>> workers;
  };
  std::optional<GangView> FindRunningGang(const std::string& job_id, uint64_t task_id) const;

 private:
  // `slots`: how many of the held loose tasks the worker could have started unreported.
  // `keep_gangs`: gangs it leads that run on (it registered again holding them).
  // `withdrawn`: as RemoveWorker's.
  std::vector<LostAttempt> LoseTasks(const std::string& worker_id, HeldTasks held,
                                     uint32_t slots, const std::string& why,
                                     const std::set<TaskKey>& keep_gangs = {},
                                     bool withdrawn = false);
  // The task of `a` when `a` is its live attempt and it runs (the job not finished); nullopt
  // otherwise (an attempt given up on, a job no longer held).
  std::optional<TaskKey> LiveAttempt(const wire::TaskAttempt& a) const;
  // A worker reports holding attempt `a` the store has no record of sending (sent in the last
  // moments before a crash): within the job's adoption window, and while the task still waits
  // in the queue at that attempt number (nobody else was dealt it since), it is the worker's.
  bool AdoptUnrecorded(uint32_t job_index, const wire::TaskAttempt& a, int64_t now_ms);
  // May worker w be sent a task asking for a GPU share of `bytes` now? (see Assign)
  bool ShareFits(const WorkerEntry& w, uint64_t bytes) const;
  // Frees every slot of a running gang's attempt.
  void EndGang(const TaskKey& key);
  // Compacts the finished jobs that asked for it and are held by no worker any more.
  void CompactReleased();
  // Does a worker still hold (or a gang still run) a task of the job at `index`?
  bool Holds(uint32_t index) const;
  // When the retry of a task that has failed `failures` times may start (0: at once).
  int64_t RetryAt(uint32_t failures) const;
  // Is there a worker other than `tried` that could take a task of the node now (alive, not
  // draining, not refused by the job, its labels and GPUs fit, a free credit)?
  bool OtherWorkerCanRun(const JobState& job, size_t plan_node,
                         const std::vector<std::string>& tried) const;

  struct RunningGang {
    uint32_t attempt = 0;
    std::vector<std::pair<std::string, uint32_t>> workers;  // leader first
  };

  WorkerRegistry registry_;
  RetryPolicy retry_;
  std::function<int64_t()> clock_;
  std::vector<std::unique_ptr<JobState>> jobs_;
  std::vector<uint64_t> reopened_;  // see reopened()
  std::unordered_map<std::string, uint32_t> job_index_;
  size_t rr_cursor_ = 0;  // round robin between jobs of equal priority
  GangReservations gangs_;
  std::map<TaskKey, RunningGang> running_gangs_;
  // Attempts asked back (PlanReclaims) and not answered yet, with the worker asked.
  std::map<TaskKey, std::string> reclaiming_;
  // Finished jobs' indexes in the order their ends were released (the oldest leave first).
  std::deque<uint32_t> released_;
  // Attempts in flight at a restart, waiting for their worker (see AwaitAdoption): attempt and
  // deadline.
  struct Awaited {
    uint32_t attempt = 0;
    int64_t deadline_ms = 0;
    std::string worker_id;   // where it was sent; empty: unknown (any worker may report it)
    std::string worker_key;  // that worker's key name then
    uint32_t gang_ranks = 0;  // a gang's: all its ranks, on that worker (its leader)
  };
  std::map<TaskKey, Awaited> awaiting_;
  // Jobs restored at a restart -> until when an unrecorded attempt may be adopted.
  std::map<uint32_t, int64_t> unrecorded_until_;
  int64_t hold_dispatch_until_ = 0;  // 0: no hold (see AwaitingHolders)
};

}  // namespace coupler::coordinator
