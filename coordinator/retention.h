// Retention: which finished jobs' run directories (their outputs, task logs, checkpoints and
// step histories) may be removed, and removing them (`coupler gc`). A job's row stays in the
// state (status shows it, with its nodes), only its files go. Never removed: the run directory
// of a job not finished, of one within the retention, of one whose outputs the reuse catalogue
// records (a later --reuse would link them), or one that does not carry the job's own workdir
// marker (it is not a directory coupler made for that job).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "coordinator/store/records.h"
#include "runtime/status.h"

namespace coupler::coordinator {

struct RetentionPolicy {
  int64_t older_than_ms = 0;  // finished at least this long ago
  size_t keep_jobs = 0;       // and not among the newest this many finished jobs
};

// The finished jobs of `newest_first` (as StateStore::ListJobs gives them) past `policy` at
// `now_ms`, oldest last. Pure.
std::vector<const store::JobRecord*> PastRetention(const std::vector<store::JobRecord>& newest_first,
                                                   int64_t now_ms, const RetentionPolicy& policy);

struct GcEntry {
  std::string job_id;
  std::string run_dir;
  uint64_t bytes = 0;   // removed (or, on a dry run, that would be)
  std::string kept;     // why it stays; empty when removed
};

// What decides for each candidate, beside the policy: is `run_dir` still recorded as reusable?
using ReusableCheck = std::function<Result<bool>(const std::string& run_dir)>;

// Removes the run directories of `candidates` (from PastRetention) unless one of the rules
// above keeps them; `in_use`: the run directories of every job not a candidate (unfinished, or
// within the retention), which share-nothing runs never match but a pinned `run_dir` may. On a
// dry run nothing is removed. `progress` is called once per candidate.
std::vector<GcEntry> RemoveRunDirs(const std::vector<const store::JobRecord*>& candidates,
                                   const std::vector<std::string>& in_use,
                                   const ReusableCheck& reusable, bool dry_run,
                                   const std::function<void(const GcEntry&)>& progress);

}  // namespace coupler::coordinator
