// The tables behind StateStore and their version (PRAGMA user_version), so a database written by
// a newer coupler is refused instead of misread, and a foreign SQLite file is never written to.
#pragma once

#include <string>

#include "runtime/status.h"
#include "coordinator/store/sqlite_db.h"

namespace coupler::store {

// Bump when the tables change, and teach EnsureSchema to migrate from the previous version.
// 2: jobs.submitted_by and a finished job's counts; 3: jobs.submission_id; 4: the commit
// generation (table generation); 5: jobs.plan (the admitted plan a restart replays), jobs.run_dir, an index on
// submission ids (finished jobs are looked up in the state, not held in memory); 6: sent.worker_id
// and sent.worker_key (a restart adopts an attempt only from the worker it was sent to); 7:
// sent.gang_ranks; 8: sent.returned (attempts given back unstarted); 9: tables counters (the
// pool's coupler_*_total, kept across restarts) and bans (worker ids an admin banned); 10:
// gpu_health; 11: task_log (one row per job per flush in place of a row per commit, attempt
// and assignment message; the older tables are read, never written).
inline constexpr int kSchemaVersion = 11;
// PRAGMA application_id: "CPLR". Tells our files apart from other SQLite databases.
inline constexpr int kApplicationId = 0x43504c52;

// Read-only check, before anything is written: the file must be empty (fresh) or coupler state
// of a version this build reads. `path` is for messages.
Status CheckSchema(SqliteDb& db, const std::string& path);

// Creates the tables in a fresh database; checks again inside the write transaction, so two
// coordinators racing on a new state dir cannot both create them.
Status EnsureSchema(SqliteDb& db, const std::string& path);

// The commit generation the database holds (see commit_generation.h); 0 before the first.
Result<uint64_t> ReadGeneration(SqliteDb& db);

// For a read-only opener: the file must already hold coupler state of a version this build reads.
Status CheckSchemaForReading(SqliteDb& db, const std::string& path);

}  // namespace coupler::store
