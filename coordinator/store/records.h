// The rows a coordinator keeps across restarts: submitted jobs, the one committed result of each
// task, and every task attempt that ended. Plain data; StateStore reads and writes them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace coupler::store {

struct JobCounts {
  uint64_t tasks_total = 0;
  uint64_t tasks_done = 0;
  uint64_t tasks_failed = 0;
  uint64_t attempts = 0;
  friend bool operator==(const JobCounts&, const JobCounts&) = default;
};

struct JobRecord {
  std::string id;         // "j-000001"-style, assigned by the coordinator; trailing digits count
  std::string name;
  std::string spec_text;  // the submitted YAML/JSON, as submitted (for people and `coupler retry`)
  std::string spec_path;  // as the user gave it, for messages
  std::string base_dir;   // relative paths in the spec resolve here
  int priority = 0;
  std::string state;      // queued | running | succeeded | failed | cancelled
  std::string error;
  int64_t submitted_ms = 0;
  int64_t finished_ms = 0;
  // What admission decided (coordinator/admitted_plan.h): a restart replays it. Empty for a job
  // admitted by an older coupler (its `extra` lines are read then), and in what LoadJobs
  // returns (LoadPlan reads it: only unfinished jobs need it, and a plan may be large).
  std::string plan;
  // Its run directory (its outputs and logs), for a finished job's status after a restart.
  // Empty for a job admitted before it was kept (then in `extra`).
  std::string run_dir;
  // After a `coupler retry`: "base\t<task>\t<attempts>" lines (JobState::attempt_base). For a
  // job admitted by an older coupler also its admission lines (job_intake.cc).
  std::string extra;
  std::string submitted_by;  // the name of the client key that submitted it ("" if insecure)
  // The client's id for the submission (a retried HTTP POST names the same one): "" if none.
  std::string submission_id;
  // Its final counts, written with its final state: a finished job is restored as this row.
  JobCounts counts;

  friend bool operator==(const JobRecord&, const JobRecord&) = default;
};

// The one committed result of a task: the first attempt to finish wins, later ones are dropped.
struct TaskCommit {
  std::string job_id;
  uint64_t task_id = 0;
  uint32_t attempt = 0;
  std::vector<std::string> output_paths;
  uint64_t rows_in = 0;
  uint64_t rows_out = 0;
  std::string device;
  double kernel_ms = 0;
  uint64_t bytes_processed = 0;
  std::string worker_id;

  friend bool operator==(const TaskCommit&, const TaskCommit&) = default;
};

// An attempt that ended, however it ended: ok, failed, lost (its worker died), withdrawn (an
// operator took its worker away: not charged against `retries`), output_lost (it had committed,
// and its output went missing before a reduce read it) or cancelled.
inline constexpr std::string_view kWithdrawnOutcome = "withdrawn";
// A committed attempt whose output a reduce found missing (lineage): its commit is revoked and
// the task runs again, not charged against `retries` (replayed so at restart, as withdrawn is).
inline constexpr std::string_view kOutputLostOutcome = "output_lost";
struct AttemptRecord {
  std::string job_id;
  uint64_t task_id = 0;
  uint32_t attempt = 0;
  std::string worker_id;
  std::string outcome;
  std::string error;
  int64_t ended_ms = 0;

  friend bool operator==(const AttemptRecord&, const AttemptRecord&) = default;
};

// The attempts sent to workers in one assignment message, for one job: (task, attempt)
// pairs. One row per message, not per task, so dispatch stays cheap; on restart they tell
// which attempts were in flight.
struct SentAttempts {
  std::string job_id;
  std::vector<std::pair<uint64_t, uint32_t>> tasks;
  // Where the message went: the worker's id and the name of its key (empty under --insecure).
  // A restart adopts an attempt only from that worker (Scheduler::AwaitAdoption).
  std::string worker_id;
  std::string worker_key;
  // A gang's attempt (then `tasks` holds it alone, sent to its leader): the ranks the leader
  // runs itself; 0 for loose tasks.
  uint32_t gang_ranks = 0;
  // Not a send but its undoing: the worker gave these attempts back unstarted (Reclaimed, or
  // a drain) and they wait in the queue again under the same numbers. A restart replays it, so
  // an attempt that never ran is neither waited for nor charged.
  bool returned = false;
  friend bool operator==(const SentAttempts&, const SentAttempts&) = default;
};

// One attempt sent, and to whom (SentAttempts, one per attempt), as a restart reads them back.
// Rows written before the worker was recorded have empty worker fields.
struct SentAttempt {
  uint64_t task = 0;
  uint32_t attempt = 0;
  std::string worker_id;
  std::string worker_key;
  uint32_t gang_ranks = 0;  // SentAttempts::gang_ranks
  bool returned = false;    // SentAttempts::returned
  friend bool operator==(const SentAttempt&, const SentAttempt&) = default;
};

}  // namespace coupler::store
