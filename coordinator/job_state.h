// JobState: one submitted job as the scheduler sees it — its plan unrolled into tasks, each
// task's state and attempts, and the per-node countdowns that release the next stage; where
// its ready tasks wait, and how many, is ReadyQueues' (ready_queues.h), told by SetState. Pure
// logic; the wire form of its tasks is TaskSpecs' (task_specs.h),
// and what people are told beside the states is JobFacts' (job_facts.h). Its code: dispatch and
// outcomes in job_state.cc; tasks handed back and restarts in job_state_restore.cc; cancel,
// compaction and `coupler retry` in job_state_finished.cc.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/job_facts.h"
#include "coordinator/placement/placement.h"
#include "coordinator/ready_queues.h"
#include "coordinator/task_specs.h"
#include "coordinator/task_table.h"
#include "runtime/job/job_graph.h"
#include "runtime/job/job_phase.h"
#include "runtime/plan/planner.h"
#include "runtime/wire/client_messages.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::coordinator {

enum class TaskState : uint8_t { kBlocked, kReady, kRunning, kDone, kFailed, kCancelled };
using job::JobPhase;
using job::JobPhaseName;

class JobState;

// A worker asking for loose tasks, as the job's queues see it.
struct Taker {
  bool has_gpus = false;
  const Labels* labels = nullptr;  // the worker's; null: none (not copied: Assign is hot)
  // Whether a task asking for a GPU share of `bytes` may go to this worker now; unset: yes.
  std::function<bool(uint64_t bytes)> share_fits;
  // The asking worker's id, and whether another worker than those in `tried` could take a
  // task of the plan node now: a task that failed on this worker is left for such a one.
  // Unset: a task goes wherever it is asked for.
  const std::string* worker_id = nullptr;
  std::function<bool(const JobState& job, size_t plan_node, const std::vector<std::string>& tried)>
      elsewhere;
};

// An attempt that ended without a result: failed (its outcome) or lost with its worker.
struct FailedAttempt {
  std::string error;      // for people: the node's and the job's error when the task fails
  std::string worker_id;  // where it ran: its retry prefers another worker
  // False: the error would come back on any attempt (InvalidData), so the task fails now,
  // whatever `retries:` allows.
  bool retryable = true;
  // When its retry may start (the scheduler's clock, ms); 0 or in the past: at once.
  int64_t retry_at_ms = 0;
  // A fused chain's attempt that failed in a later node's step: that node (its id), whose
  // error it is. Empty: the task's own node.
  std::string fused_node;
};

class JobState {
 public:
  JobState(std::string id, job::JobGraph graph, plan::Plan plan, DatasetListing datasets);
  // Not copied or moved: specs_ borrows graph_ and plan_.
  JobState(const JobState&) = delete;
  JobState& operator=(const JobState&) = delete;

  const std::string& id() const { return id_; }
  const job::JobGraph& graph() const { return graph_; }
  const plan::Plan& plan() const { return plan_; }
  const TaskTable& table() const { return table_; }
  JobPhase phase() const { return phase_; }
  const std::string& error() const { return error_; }
  int priority() const { return graph_.priority; }
  bool finished() const { return job::IsFinished(phase_); }

  TaskState task_state(uint64_t task) const { return static_cast<TaskState>(state_[task]); }
  uint32_t attempts(uint64_t task) const { return attempts_[task]; }
  uint64_t done() const { return done_; }
  // Tasks handed out and not ended: started in a slot, or sent to a worker's queue (the
  // worker registry knows which), gangs included. 0 once the job has finished.
  uint64_t running() const { return running_; }
  // Attempts started, a fused chain's counted once for each node it ran (each is the node's
  // attempt at its shard, as a user counts them).
  uint64_t total_attempts() const {
    uint64_t n = total_attempts_;
    for (const size_t p : fused_nodes_) n += node_attempts_[fused_head_[p]];
    return n;
  }
  // Entries in its loose queues (stale ones included).
  size_t ready_count() const { return queues_.queued(); }
  uint64_t failed() const { return failed_; }

  // Pops the next ready task `taker` may run and marks it running (its attempt counter +1).
  // Tasks of nodes that ask for whole GPUs go only to workers that have GPUs, tasks of nodes
  // with `requires` only to workers whose labels match, GPU shares (gpu_memory) only where
  // taker.share_fits says they fit. nullopt when none is ready or the job has finished.
  std::optional<uint64_t> TakeReady(const Taker& taker);
  // Would TakeReady give this worker a task? (Stale queue entries may make it say yes.)
  bool HasReadyFor(const Taker& taker) const;
  // Ready gang tasks (tight nodes), oldest first. They never come out of TakeReady: the
  // scheduler reserves all their ranks first, then starts them with StartGang.
  std::vector<uint64_t> ReadyGangs() const;
  void StartGang(uint64_t task);
  // The wire form of a task (see TaskSpecs), with its identity and current attempt.
  wire::TaskSpec MakeSpec(uint64_t task) const;
  // A tight node's gang size (1 for loose nodes).
  int ranks(size_t plan_node) const { return plan_.nodes[plan_node].ranks; }
  // Whole GPUs: the node asked for them, or it is a gang of a GPU op (see job_state.cc).
  bool wants_gpus(size_t plan_node) const;
  // The slice of one GPU each of the node's tasks asks for (gpu_memory); 0 for none.
  uint64_t gpu_share(size_t plan_node) const;
  // The node's `requires`: labels a worker must have to run its tasks.
  const Labels& required_labels(size_t plan_node) const {
    return graph_.nodes[plan_.nodes[plan_node].node_index].required_labels;
  }
  // Ready loose tasks, split by whether their node asks for GPUs: {cpu, gpu}.
  std::pair<uint64_t, uint64_t> ReadyLooseByHardware() const;
  // Does the plan node have tasks ready (not running) now?
  bool node_has_ready(size_t plan_node) const { return queues_.node_has_ready(plan_node); }
  // May the taker run the node's tasks (labels, GPUs, share room)?
  bool Admits(size_t plan_node, const Taker& taker) const;

  // Outcome of a running (or, for late duplicates, any) attempt. Returns false when the
  // result was dropped: the task was already done, or the job has finished. A fused chain's
  // first task completes the same shard of every node fused after it.
  bool Complete(uint64_t task);
  // An attempt that failed (ok=false) or was lost with its worker: re-queued while attempts
  // remain and the error is retryable (at failure.retry_at_ms, see ReleaseDueRetries), else
  // the task and the job fail with its error.
  void Fail(uint64_t task, const FailedAttempt& failure);
  // Tasks whose back-off has ended by `now_ms` go back to the front of their queues.
  void ReleaseDueRetries(int64_t now_ms);
  // Retries waiting out their back-off (their state is kReady, they are in no queue yet).
  size_t backing_off() const { return backing_off_.size(); }
  // The workers a task's failed or lost attempts ran on, oldest first.
  const std::vector<std::string>& tried_on(uint64_t task) const;
  // Lineage: a reduce task (`reduce`, running) found the inputs `lost_inputs` (indexes into its
  // input_paths) missing. The done map tasks of its node that wrote them are ready again, at the
  // front of their queue, their next attempt not charged against `retries` (their last one
  // succeeded); the node's reduces that fail from now on wait until every map task is done
  // again. Returns the map tasks reopened (none for a task that is not a reduce, a node fused
  // into a chain, or maps not done).
  std::vector<uint64_t> ReopenLostInputs(uint64_t reduce, const std::vector<uint32_t>& lost_inputs);
  // A running attempt that never started (it was only queued on a worker that was lost): back
  // to the front of its queue, its attempt not charged against `retries`.
  void Requeue(uint64_t task);
  // A running attempt taken from its worker through no fault of the task (an operator revoked
  // the worker's key or banned it): ready again at the front of its queue under a new number
  // (the old one may still run there, and its result must not pass for the new one's), not
  // charged against `retries` (its attempt base moves up with it).
  void Reissue(uint64_t task);
  // A worker holds attempt `attempt` of a task that waits in the queue with exactly that many
  // attempts made (its send was never recorded): it runs there, under that number. False when
  // the task is not ready at that number. Its queue entry goes stale (skipped when reached).
  bool AdoptQueued(uint64_t task, uint32_t attempt);
  // A task lost with its worker before the worker reported it running: true once this has
  // happened kUnreportedLossesCharged times, when it must be charged after all (a task that
  // kills its worker before any report would otherwise be retried for ever).
  bool ChargeUnreportedLoss(uint64_t task);
  static constexpr uint8_t kUnreportedLossesCharged = 3;
  // After a restart: restored tasks whose last attempt (attempts() - 1) was in flight when the
  // coordinator stopped. Each one still ready becomes running, held by no worker, until its
  // worker reports holding that attempt (adopted, see Scheduler::AwaitAdoption) or nobody does
  // (AbandonAdoption). Returns those it took; the others (not ready: done, not released) are
  // left as they are.
  std::vector<uint64_t> AwaitAdoption(const std::vector<uint64_t>& tasks);
  // No worker reported the attempt: the task is ready again, its next attempt a new number (the
  // old one may still finish somewhere, and its result must not pass for the new one's).
  void AbandonAdoption(uint64_t task);
  // Marks a task done without running it (resume from the state store).
  void RestoreDone(uint64_t task, uint32_t attempts);
  void RestoreAttempts(uint64_t task, uint32_t attempts);
  void Cancel();

  // A finished job that nothing needs in full any more (its end is on disk, no task of it is
  // held) keeps only `summary`, what status shows of it: the graph, plan, task table and
  // per-task state of a job of 200,000 nodes are hundreds of MiB. From then on table() is
  // empty (results for it are stale), and `coupler retry` rebuilds it from the store, as after
  // a restart. The Scheduler decides when (Scheduler::ReleaseFinished).
  void Compact(wire::JobStatus summary);
  bool compacted() const { return summary_.has_value(); }
  const wire::JobStatus& summary() const { return *summary_; }
  // Asked for once the job's end is on disk; a Retry withdraws it (the next end asks again).
  void WantCompact() { compact_wanted_ = true; }
  bool compact_wanted() const { return compact_wanted_; }

  // `coupler retry`: a failed or cancelled job runs again in place. Its done tasks stay done;
  // every other task is queued again (as its inputs allow) with a fresh attempt budget: its
  // attempts go on numbering after the old ones (so logs and late results never mix) but
  // count against `retries` from here. The job is running again.
  void Retry();
  // The attempts a task had when it was last retried (0 if never): restored after a restart.
  uint32_t attempt_base(uint64_t task) const { return attempt_base_[task]; }
  void RestoreAttemptBase(uint64_t task, uint32_t base) {
    attempt_base_[task] = static_cast<uint8_t>(std::min<uint32_t>(base, 255));
  }

  // Reuse (reuse_index.h): the node's outputs came from an earlier run (`from`: its run
  // directory, kept in facts()): its tasks are done without running.
  void MarkReused(size_t plan_node, std::string from);

  // What status and people are told of the job (job_facts.h): times, owner, devices, gang
  // hosts, reuse.
  JobFacts& facts() { return facts_; }
  const JobFacts& facts() const { return facts_; }
  // The token of the marker written into the workdir at admission (workdir_marker.h); every
  // task spec carries it, so a worker can tell whether it sees the same filesystem.
  void set_workdir_token(std::string token) { workdir_token_ = std::move(token); }
  const std::string& workdir_token() const { return workdir_token_; }

  // A worker that cannot run any task of this job (it cannot see the workdir): it is sent none
  // of its tasks from now on, and status says why. Not persisted: after a restart the worker
  // refuses once more, which costs one round trip.
  void RefuseHost(const std::string& worker_id, const std::string& address, const std::string& why) {
    refused_hosts_[worker_id] = {worker_id, address, why};
  }
  bool Refuses(const std::string& worker_id) const { return refused_hosts_.count(worker_id) != 0; }
  const std::map<std::string, wire::HostRefusal>& refused_hosts() const { return refused_hosts_; }

  // Per plan node: tasks done, attempts, first error.
  uint64_t node_done(size_t plan_node) const { return node_done_[plan_node]; }
  // The node's share of running(): 0 once the job has finished.
  uint64_t node_running(size_t plan_node) const { return node_running_[plan_node]; }
  // A fused node's attempts are its chain's: the first node's task ran it.
  uint64_t node_attempts(size_t plan_node) const { return node_attempts_[fused_head_[plan_node]]; }
  const std::string& node_error(size_t plan_node) const { return node_error_[plan_node]; }
  bool node_released(size_t plan_node) const { return deps_left_[plan_node] == 0; }
  // The plan node fused after this one (its tasks complete with this node's); SIZE_MAX: none.
  size_t fused_next(size_t plan_node) const { return fused_next_[plan_node]; }
  // The node whose tasks run this one (itself when it is not fused after another).
  size_t fused_head(size_t plan_node) const { return fused_head_[plan_node]; }
  // The ids of the nodes a chain's first node runs after its own, in order; empty otherwise.
  const std::vector<std::string>& fused_after_ids(size_t plan_node) const {
    static const std::vector<std::string> kNone;
    auto it = fused_ids_.find(plan_node);
    return it == fused_ids_.end() ? kNone : it->second;
  }

 private:
  void MarkRunning(uint64_t task);
  // Back to its ready queue after a failed or never-started attempt.
  void ReadyAgain(uint64_t task);
  // Pops the first ready task of `queue` the taker should run and marks it running; tasks
  // that failed on this worker and can run on another are passed over and keep their places.
  std::optional<uint64_t> TakeFrom(std::deque<uint64_t>& queue, const Taker& taker);
  bool PrefersElsewhere(uint64_t task, const Taker& taker) const;
  // Where the node's ready tasks wait and what they count as (fixed at admission).
  ReadyQueues::Route RouteOf(size_t plan_node) const;
  // Every change of a task's state goes through here, so the ready counts stay true.
  void SetState(uint64_t task, const TaskRef& ref, TaskState s);
  void SetState(uint64_t task, TaskState s);
  void Release(size_t plan_node);
  // Makes the node's reduce tasks ready once its map tasks are all done.
  void ReleaseReduces(size_t plan_node);
  // A reduce task whose node has map tasks to run again (ReopenLostInputs): it waits, blocked,
  // for ReleaseReduces rather than being queued.
  bool WaitsForMaps(uint64_t task) const;
  void NodeFinished(size_t plan_node);
  void MaybeRestoreFinish();
  // One handed-out task ended (done, failed, back to the queue).
  void EndRunning(size_t plan_node);
  // The job finished with tasks still out: their results will be dropped, so none counts as
  // running any more.
  void ForgetRunning();
  int MaxAttempts(size_t plan_node) const;

  std::string id_;
  job::JobGraph graph_;
  plan::Plan plan_;
  TaskTable table_;
  std::optional<TaskSpecs> specs_;  // reset by Compact
  std::vector<uint8_t> state_;         // TaskState per task
  std::vector<uint8_t> attempts_;      // attempts started per task (capped at 255)
  std::vector<uint8_t> unreported_losses_;  // see ChargeUnreportedLoss
  std::vector<uint8_t> attempt_base_;       // see Retry
  std::vector<uint32_t> deps_left_;    // per plan node: input nodes not finished yet
  std::vector<uint64_t> node_done_;
  std::vector<uint64_t> node_maps_done_;
  std::vector<uint64_t> node_attempts_;
  std::vector<uint64_t> node_running_;
  std::vector<std::string> node_error_;
  std::vector<std::vector<uint32_t>> readers_;  // per plan node: plan nodes reading it
  // Per plan node, the node fused after it (runtime/plan/fusion.h); SIZE_MAX: none. The node
  // whose tasks run its chain (itself when not fused after another), and the fused nodes.
  std::vector<size_t> fused_next_;
  std::vector<size_t> fused_head_;
  std::vector<size_t> fused_nodes_;
  std::map<size_t, std::vector<std::string>> fused_ids_;  // by chain start: see fused_after_ids
  ReadyQueues queues_;  // the ready tasks, and how many (kept by SetState)
  JobPhase phase_ = JobPhase::kQueued;
  std::string error_;
  uint64_t done_ = 0;
  uint64_t running_ = 0;
  uint64_t failed_ = 0;
  JobFacts facts_;
  std::string workdir_token_;
  std::map<std::string, wire::HostRefusal> refused_hosts_;
  uint64_t total_attempts_ = 0;
  // Retries waiting out their back-off, by the time they may start. Not persisted: after a
  // coordinator restart they are ready at once.
  std::multimap<int64_t, uint64_t> backing_off_;
  // Per task with failed attempts: the workers they ran on (see Taker::elsewhere).
  std::map<uint64_t, std::vector<std::string>> tried_on_;
  std::optional<wire::JobStatus> summary_;  // set by Compact
  bool compact_wanted_ = false;
};

}  // namespace coupler::coordinator
