// Scheduler: every job and every worker, and the decisions between them — which tasks go to
// which worker (credit-based, round robin across jobs of the highest priority), what a
// result means (commit once, retry, fail the job), what a lost worker costs. Pure logic: the
// event loop does the sockets and the disk.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "coordinator/job_state.h"
#include "coordinator/worker_registry.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator {

// What became of a reported outcome, for the event loop to persist.
enum class OutcomeKind {
  kCommitted,  // first finished attempt: record it
  kRetrying,   // failed, re-queued
  kFailed,     // failed for good: the job failed
  kDropped,    // duplicate, late, or for a finished job
};

// An attempt that ended without a result: its worker died or left.
struct LostAttempt {
  std::string job_id;
  uint64_t task_id = 0;
  uint32_t attempt = 0;
  std::string worker_id;
};

class Scheduler {
 public:
  explicit Scheduler(int64_t worker_timeout_ms) : registry_(worker_timeout_ms) {}

  void AddJob(std::unique_ptr<JobState> job);
  JobState* FindJob(const std::string& id);
  const std::vector<std::unique_ptr<JobState>>& jobs() const { return jobs_; }

  WorkerRegistry& registry() { return registry_; }
  // Registration; tasks a same-named earlier incarnation held are treated as lost.
  std::vector<LostAttempt> RegisterWorker(const wire::RegisterWorker& info, int64_t now_ms);
  // Workers silent past the timeout, and what their tasks became.
  std::vector<LostAttempt> ReapSilentWorkers(int64_t now_ms);
  std::vector<LostAttempt> RemoveWorker(const std::string& id);

  // Up to the worker's credit of tasks, marked running on it.
  std::vector<wire::TaskSpec> Assign(const std::string& worker_id);
  // Any worker with credit and any job with ready work?
  bool HasDispatchableWork() const;

  OutcomeKind OnOutcome(const std::string& worker_id, const wire::TaskOutcome& outcome);

  // Cancels a job. Returns the workers holding its tasks, to be told to abandon them.
  std::vector<std::string> Cancel(const std::string& job_id);

  wire::JobStatus Status(const JobState& job) const;
  std::vector<wire::WorkerStatus> Workers() const;

 private:
  std::vector<LostAttempt> LoseTasks(const std::string& worker_id, const std::set<TaskKey>& held,
                                     const std::string& why);

  WorkerRegistry registry_;
  std::vector<std::unique_ptr<JobState>> jobs_;
  std::unordered_map<std::string, uint32_t> job_index_;
  size_t rr_cursor_ = 0;  // round robin between jobs of equal priority
};

}  // namespace coupler::coordinator
