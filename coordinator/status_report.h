// What `coupler status` and `coupler workers` show: jobs, nodes, the pool and the workers as
// the wire's status records, read from the scheduler's state. Reporting only: nothing here
// decides or changes anything (the decisions are the Scheduler's).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "coordinator/job_state.h"
#include "coordinator/placement/gang_reservations.h"
#include "coordinator/worker_registry.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator {

// One job with a line per plan node, and why a waiting node waits (a gang's missing slots,
// labels no alive worker has, every worker refusing the workdir). `job_index`: the job's key
// in `gangs` (unset: it holds no reservation).
wire::JobStatus ReportJob(const JobState& job, const WorkerRegistry& registry,
                          const GangReservations& gangs, std::optional<uint32_t> job_index);

// Queue depth by hardware class and the recommended pool size (see pool_advice.h).
void ReportPool(const std::vector<std::unique_ptr<JobState>>& jobs,
                const WorkerRegistry& registry, const GangReservations& gangs,
                wire::CoordinatorStats& stats);

// `now_ms`: a worker past the timeout but not yet given up on shows as "silent".
std::vector<wire::WorkerStatus> ReportWorkers(const WorkerRegistry& registry, int64_t now_ms);

}  // namespace coupler::coordinator
