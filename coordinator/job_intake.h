// Job intake: a submitted spec becomes a JobState (validated, planned, its dataset shards
// listed once) and a JobRecord to persist; a stored JobRecord becomes a JobState again on
// restart, with its committed tasks marked done. The only coordinator code that reads the
// filesystem for jobs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "coordinator/admitted_plan.h"
#include "coordinator/data_roots.h"
#include "coordinator/job_state.h"
#include "coordinator/reuse_index.h"
#include "coordinator/store/records.h"
#include "coordinator/store/state_store.h"
#include "runtime/status.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator {

struct AdmittedJob {
  std::unique_ptr<JobState> job;
  store::JobRecord record;
};

// What admission may touch beyond the spec: the paths a job may name (every input and the
// workdir are checked against `roots` before anything is read or made there), and the reuse
// catalogue (null: nothing is reused or recorded, and content hashes are not cached).
struct IntakeContext {
  const DataRoots* roots = nullptr;
  ReuseIndex* reuse = nullptr;
  // Where the intake thread reads a retried job's rows (its own read-only connection); empty:
  // retries cannot be loaded there.
  std::string state_dir;
};

// InvalidArgument carries the spec's diagnostics, one per line, ready for the user.
// `submitted_by`: the name of the client key it came from (who may cancel it).
// Reads no dataset content on the client's behalf beyond content hashes for reuse keys: the
// CSV columns an expression names are checked by `coupler plan`/`submit` as the user, and by
// the import task on a worker, never from the coordinator's reading of the file.
Result<AdmittedJob> AdmitJob(const wire::SubmitJob& submit, const std::string& job_id,
                             int64_t now_ms, const std::string& submitted_by,
                             const IntakeContext& context);

// The job state an admitted plan describes (what AdmitJob runs, and RestoreJob replays).
std::unique_ptr<JobState> JobFromPlan(const std::string& job_id, AdmittedPlan admitted);

// A stored job, replayed from its admitted plan (record.plan; a job admitted before plans were
// kept is planned again from its spec), with its commits marked done.
// `sent`: every (task, attempt) sent to a worker: a task goes on after the highest attempt it
// was sent, failed or committed with, so attempts in flight at a crash are counted too; one
// given back unstarted since its last send (returned) is not counted, and is sent again as is.
Result<std::unique_ptr<JobState>> RestoreJob(const store::JobRecord& record,
                                             const store::TaskHistory& history = {});

// What a `coupler retry` needs from the store: the job's own row (with its plan), and, for a job
// not in memory any more (finished before this start, or its tasks released), the job rebuilt
// from its rows as a restart would. Reads only that job's rows; run off the event loop (the
// intake thread), since a big job's commits are many.
struct RetryLoad {
  store::JobRecord record;
  std::unique_ptr<JobState> rebuilt;  // null when not asked for
};
Result<RetryLoad> LoadForRetry(store::StateStore& store, const std::string& job_id, bool rebuild);

// The attempts of a stored job that were sent and had neither committed nor ended (failed,
// lost) when the coordinator stopped: still running somewhere, or lost with their worker (not
// those given back unstarted since). One per (task, attempt), in that order, with the worker it
// was sent to. A restart waits for their workers to report them (Scheduler::AwaitAdoption).
// Its commits by task id, as StateStore::LoadTaskHistory returns them.
std::vector<store::SentAttempt> InFlightAttempts(const store::TaskHistory& history);

// The run directory a stored job was admitted with ("" for a record without one), for the
// status of a finished job after a restart (its logs and outputs are there).
std::string RunDirOf(const store::JobRecord& record);

// A job this coordinator does not run (finished before its start) as `status` shows it: its
// row, never its spec again.
wire::JobStatus SummaryOf(const store::JobRecord& record);

// The job record's `extra` once `job` has been retried: its attempt bases (JobState::Retry)
// replace those of an earlier retry, so a restart mid-retry keeps the fresh budgets.
std::string ExtraAfterRetry(const std::string& extra, const JobState& job);

}  // namespace coupler::coordinator
