#include "coordinator/pool_metrics.h"

#include <algorithm>
#include <string_view>

#include "runtime/status.h"

namespace coupler::coordinator {
namespace {

// From a no-op (tens of microseconds) to a training run (hours): tasks here span eight
// orders of magnitude, so the buckets grow by about x4.
std::vector<double> TaskBuckets() {
  return {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800, 7200};
}
// Gangs wait for whole hosts to free up: seconds to hours.
std::vector<double> GangBuckets() { return {0.01, 0.1, 1, 5, 15, 60, 300, 1800, 7200}; }

}  // namespace

std::vector<double> LoopLagBounds() {
  return {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), value);
  ++counts_[static_cast<size_t>(it - bounds_.begin())];
  sum_ += value;
  ++count_;
}

const char* RetryReasonName(RetryReason reason) {
  switch (reason) {
    case RetryReason::kFailed: return "failed";
    case RetryReason::kWorkerLost: return "worker_lost";
    case RetryReason::kTimeout: return "timeout";
    case RetryReason::kInvalidData: return "invalid_data";
    case RetryReason::kOutputLost: return "output_lost";
  }
  return "failed";
}

RetryReason FailureCause(uint16_t error_code) {
  switch (static_cast<StatusCode>(error_code)) {
    case StatusCode::kInvalidData: return RetryReason::kInvalidData;
    case StatusCode::kDeadlineExceeded: return RetryReason::kTimeout;
    default: return RetryReason::kFailed;
  }
}

PoolMetrics::PoolMetrics()
    : task_duration(TaskBuckets()), task_queue_wait(TaskBuckets()), gang_wait(GangBuckets()) {
  // Every label value present from the start, at 0: a rate() over a series that appears
  // mid-run misses its first increments.
  for (const char* outcome : {"succeeded", "failed", "cancelled"}) jobs_finished[outcome] = 0;
  for (RetryReason r : {RetryReason::kFailed, RetryReason::kWorkerLost, RetryReason::kTimeout}) {
    retries[RetryReasonName(r)] = 0;
    failures[RetryReasonName(r)] = 0;
  }
  failures[RetryReasonName(RetryReason::kInvalidData)] = 0;
  retries[RetryReasonName(RetryReason::kOutputLost)] = 0;
}

namespace {

constexpr const char* kJobsSubmitted = "jobs_submitted";
constexpr const char* kTasksDone = "tasks_done";
constexpr const char* kTasksFailed = "tasks_failed";
constexpr const char* kGpuFallbackTasks = "gpu_fallback_tasks";
// Labelled counters: "{family}.{label value}".
constexpr std::string_view kJobsFinished = "jobs_finished.";
constexpr std::string_view kRetries = "retries.";
constexpr std::string_view kFailures = "failures.";

}  // namespace

std::map<std::string, uint64_t> PoolMetrics::Counters() const {
  std::map<std::string, uint64_t> c{{kJobsSubmitted, jobs_submitted},
                                    {kTasksDone, tasks_done},
                                    {kTasksFailed, tasks_failed},
                                    {kGpuFallbackTasks, gpu_fallback_tasks}};
  for (const auto& [outcome, n] : jobs_finished) c[std::string(kJobsFinished) + outcome] = n;
  for (const auto& [reason, n] : retries) c[std::string(kRetries) + reason] = n;
  for (const auto& [cause, n] : failures) c[std::string(kFailures) + cause] = n;
  return c;
}

void PoolMetrics::RestoreCounters(const std::map<std::string, uint64_t>& counters) {
  for (const auto& [name, n] : counters) {
    const std::string_view key = name;
    if (key == kJobsSubmitted) {
      jobs_submitted = n;
    } else if (key == kTasksDone) {
      tasks_done = n;
    } else if (key == kTasksFailed) {
      tasks_failed = n;
    } else if (key == kGpuFallbackTasks) {
      gpu_fallback_tasks = n;
    } else if (key.starts_with(kJobsFinished)) {
      jobs_finished[std::string(key.substr(kJobsFinished.size()))] = n;
    } else if (key.starts_with(kRetries)) {
      retries[std::string(key.substr(kRetries.size()))] = n;
    } else if (key.starts_with(kFailures)) {
      failures[std::string(key.substr(kFailures.size()))] = n;
    }
  }
}

}  // namespace coupler::coordinator
