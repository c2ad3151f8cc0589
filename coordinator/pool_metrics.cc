#include "coordinator/pool_metrics.h"

#include <algorithm>

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
}

}  // namespace coupler::coordinator
