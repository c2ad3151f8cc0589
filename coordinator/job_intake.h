// Job intake: a submitted spec becomes a JobState (validated, planned, its dataset shards
// listed once) and a JobRecord to persist; a stored JobRecord becomes a JobState again on
// restart, with its committed tasks marked done. The only coordinator code that reads the
// filesystem for jobs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coordinator/job_state.h"
#include "runtime/status.h"
#include "coordinator/store/records.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator {

struct AdmittedJob {
  std::unique_ptr<JobState> job;
  store::JobRecord record;
};

// InvalidArgument carries the spec's diagnostics, one per line, ready for the user.
// `submitted_by`: the name of the client key it came from (who may cancel it).
Result<AdmittedJob> AdmitJob(const wire::SubmitJob& submit, const std::string& job_id,
                             int64_t now_ms, const std::string& submitted_by);

// `sent`: every (task, attempt) sent to a worker: a task goes on after the highest attempt it
// was sent, failed or committed with, so attempts in flight at a crash are counted too.
Result<std::unique_ptr<JobState>> RestoreJob(
    const store::JobRecord& record, const std::vector<store::TaskCommit>& commits,
    const std::vector<store::AttemptRecord>& attempts,
    const std::vector<std::pair<uint64_t, uint32_t>>& sent = {});

// The run directory a stored job was admitted with ("" for a record without one), for the
// status of a finished job after a restart (its logs and outputs are there).
std::string RunDirOf(const store::JobRecord& record);

// The job record's `extra` once `job` has been retried: its attempt bases (JobState::Retry)
// replace those of an earlier retry, so a restart mid-retry keeps the fresh budgets.
std::string ExtraAfterRetry(const std::string& extra, const JobState& job);

}  // namespace coupler::coordinator
