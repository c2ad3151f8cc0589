// PoolMetrics: the counters and histograms the event loop keeps for operators (what
// `/metrics` exposes beside the counts a status report already has). Plain values updated on
// the loop's thread and copied into each published snapshot; nothing here locks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace coupler::coordinator {

// A histogram with fixed upper bounds (seconds), as Prometheus wants it: per-bucket counts,
// their sum and count. Buckets are cumulative only when rendered.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);

  const std::vector<double>& bounds() const { return bounds_; }
  // counts()[i]: observations in (bounds[i-1], bounds[i]]; the last entry: above every bound.
  const std::vector<uint64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  double sum_ = 0;
  uint64_t count_ = 0;
};

// The bounds of the event loop's turn-time histogram (seconds): a turn is tens of microseconds
// when idle, and anything near a second is the lag /readyz refuses.
std::vector<double> LoopLagBounds();

// Why an attempt ended without a result: its task failed, its worker was lost, it ran past its
// timeout, or its input or params are wrong (InvalidData, never retried: the task fails after
// that one attempt). The label values of coupler_task_failures_total, and of
// coupler_task_retries_total for the first three.
// kOutputLost: a done map task run again because a reduce found its output missing (lineage);
// a retry, never a failure.
enum class RetryReason { kFailed, kWorkerLost, kTimeout, kInvalidData, kOutputLost };
const char* RetryReasonName(RetryReason reason);
// A failed outcome's cause, from its TaskOutcome.error_code.
RetryReason FailureCause(uint16_t error_code);

struct PoolMetrics {
  PoolMetrics();

  uint64_t jobs_submitted = 0;
  std::map<std::string, uint64_t> jobs_finished;  // by outcome: succeeded, failed, cancelled
  // A task attempt's time in its slot (the worker measures it), and a first attempt's wait
  // from its node becoming ready (job admitted, inputs done) to its being sent to a worker.
  Histogram task_duration;
  Histogram task_queue_wait;
  // A gang's wait from its node becoming ready to all its ranks being placed.
  Histogram gang_wait;
  std::map<std::string, uint64_t> retries;   // by RetryReasonName
  std::map<std::string, uint64_t> failures;  // failed or lost attempts, retried or not, by cause
  // Task attempts that ended with an outcome: committed (done) or failed (retried or not).
  // Plain counters: they are bumped for every task.
  uint64_t tasks_done = 0;
  uint64_t tasks_failed = 0;
  uint64_t gpu_fallback_tasks = 0;  // committed tasks that asked for a GPU and ran on the CPU

  void CountRetry(RetryReason reason) { ++retries[RetryReasonName(reason)]; }
  void CountFailure(RetryReason reason) { ++failures[RetryReasonName(reason)]; }

  // The counters by stable name ("tasks_done", "retries.timeout", ...): what the state keeps
  // (store/counter_rows.h) so they go on across restarts. Histograms start again empty.
  std::map<std::string, uint64_t> Counters() const;
  // Takes the counters back from what Counters() gave; names it does not know are ignored.
  void RestoreCounters(const std::map<std::string, uint64_t>& counters);
};

}  // namespace coupler::coordinator
