// `coupler state backup` and `restore`: a state directory copied whole and consistent — its
// database (and the reuse catalogue) through SQLite's online backup, so the coordinator may be
// running and writing meanwhile, and what a restore also needs: the key set (keys/) and the HTTP
// tokens. Everything keeps its owner-only mode: the database holds every submitted spec, the
// key set the coordinator's secret key.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/status.h"

namespace coupler::store {

struct BackupSummary {
  uint64_t database_bytes = 0;
  size_t files = 0;  // besides the database: keys, tokens, the reuse catalogue
};

// Copies `state_dir` into `backup_dir`, which must not exist or be empty (made 0700).
// NotFound when `state_dir` holds no state; InvalidArgument for a non-empty `backup_dir`.
Result<BackupSummary> BackupState(const std::string& state_dir, const std::string& backup_dir);

// Puts a backup back into `state_dir` (made 0700 when missing), which must hold no database:
// restoring over a live state would lose it. Holds the state's lock while it copies, so no
// coordinator starts on it halfway. The next coordinator started on it resumes what the backup
// holds (commits made after the backup are not there: a restore is a step back in time).
Result<BackupSummary> RestoreState(const std::string& backup_dir, const std::string& state_dir);

}  // namespace coupler::store
