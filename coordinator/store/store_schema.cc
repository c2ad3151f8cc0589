#include "coordinator/store/store_schema.h"

#include <cstdint>

namespace coupler::store {
namespace {

// Every column NOT NULL: the records have no optional fields, and a NULL read back would
// silently become "" or 0 anyway.
constexpr const char* kCreateTables = R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY NOT NULL,
  number INTEGER,  -- the id's trailing digits, NULL if none: NextJobNumber reads its maximum
  name TEXT NOT NULL,
  spec_text TEXT NOT NULL,
  spec_path TEXT NOT NULL,
  base_dir TEXT NOT NULL,
  priority INTEGER NOT NULL,
  state TEXT NOT NULL,
  error TEXT NOT NULL,
  submitted_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL,
  extra BLOB NOT NULL,
  submitted_by TEXT NOT NULL DEFAULT '',
  tasks_total INTEGER NOT NULL DEFAULT 0,
  tasks_done INTEGER NOT NULL DEFAULT 0,
  tasks_failed INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  submission_id TEXT NOT NULL DEFAULT '',
  plan BLOB NOT NULL DEFAULT x'',  -- coordinator/admitted_plan.h; empty before version 5
  run_dir TEXT NOT NULL DEFAULT ''
);
CREATE INDEX jobs_by_number ON jobs(number);
CREATE INDEX jobs_by_submission ON jobs(submission_id);
-- Each job's task history — commits, commits taken back, ended attempts, attempts sent — one
-- row per job per flush, its records in order (coordinator/store/task_log.h). States from
-- schema 10 and older also keep their per-row tables (commits, attempts, sent), read first.
CREATE TABLE task_log (
  seq INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  records BLOB NOT NULL
);
CREATE INDEX task_log_by_job ON task_log(job_id, seq);
)sql" R"sql(
-- The pool's counters (counter_rows.h), so coupler_*_total go on across restarts.
CREATE TABLE counters (
  name TEXT PRIMARY KEY NOT NULL,
  value INTEGER NOT NULL
) WITHOUT ROWID;
-- Worker ids an admin banned (ban_rows.h).
CREATE TABLE bans (
  worker_id TEXT PRIMARY KEY NOT NULL,
  reason TEXT NOT NULL,
  banned_by TEXT NOT NULL,
  banned_ms INTEGER NOT NULL
) WITHOUT ROWID;
)sql" R"sql(
-- Each worker GPU's fence and error baselines (gpu_health_rows.h).
CREATE TABLE gpu_health (
  worker_id TEXT NOT NULL,
  gpu INTEGER NOT NULL,
  uuid TEXT NOT NULL,
  fence TEXT NOT NULL,
  fenced_ms INTEGER NOT NULL,
  ecc_seen INTEGER NOT NULL,
  xid_seen INTEGER NOT NULL,
  PRIMARY KEY (worker_id, gpu)
) WITHOUT ROWID;
)sql";

// One row, bumped by every write transaction. The state marker records it outside the
// database and its WAL, so a start can tell that commits were lost (commit_generation.h).
// IF NOT EXISTS: also the migration from an older version.
constexpr const char* kCreateGeneration = R"sql(
CREATE TABLE IF NOT EXISTS generation (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  value INTEGER NOT NULL
);
INSERT OR IGNORE INTO generation (id, value) VALUES (1, 0);
)sql";

struct SchemaInfo {
  int64_t user_version = 0;
  int64_t application_id = 0;
  int64_t object_count = 0;  // tables, indexes, views... anything in sqlite_master
};

Result<int64_t> QueryInt(SqliteDb& db, const char* sql) {
  COUPLER_ASSIGN_OR_RETURN(SqliteStatement stmt, SqliteStatement::Prepare(db.get(), sql));
  COUPLER_ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return Internal(std::string(sql) + " returned no row");
  return stmt.ColumnInt64(0);
}

// The first read of the file: a file that is not SQLite fails here ("file is not a database").
Result<SchemaInfo> ReadSchemaInfo(SqliteDb& db) {
  SchemaInfo info;
  COUPLER_ASSIGN_OR_RETURN(info.user_version, QueryInt(db, "PRAGMA user_version"));
  COUPLER_ASSIGN_OR_RETURN(info.application_id, QueryInt(db, "PRAGMA application_id"));
  COUPLER_ASSIGN_OR_RETURN(info.object_count, QueryInt(db, "SELECT count(*) FROM sqlite_master"));
  return info;
}

Status Validate(const SchemaInfo& info, const std::string& path) {
  if (info.user_version == 0) {
    if (info.object_count == 0) return Status::Ok();  // fresh
    return InvalidArgument(path + " is a SQLite database but not coupler state (it has tables "
                           "and no coupler schema version); move it away or use another state dir");
  }
  if (info.application_id != kApplicationId) {
    return InvalidArgument(path + " is a SQLite database but not coupler state (application_id " +
                           std::to_string(info.application_id) + ")");
  }
  if (info.user_version > kSchemaVersion) {
    return InvalidArgument(path + " was written by a newer coupler (schema version " +
                           std::to_string(info.user_version) + ", this build reads up to " +
                           std::to_string(kSchemaVersion) +
                           "); upgrade coupler or use another state dir");
  }
  if (info.user_version < 0) {
    return InvalidArgument(path + " has an invalid schema version " +
                           std::to_string(info.user_version));
  }
  return Status::Ok();
}

Result<SchemaInfo> ReadAndValidate(SqliteDb& db, const std::string& path) {
  Result<SchemaInfo> info = ReadSchemaInfo(db);
  if (!info.ok()) {
    return info.status().WithContext("cannot read state db " + path +
                                     " (corrupt, or not a SQLite file?)");
  }
  COUPLER_RETURN_IF_ERROR(Validate(*info, path));
  return info;
}

}  // namespace

Status CheckSchema(SqliteDb& db, const std::string& path) {
  return ReadAndValidate(db, path).status();
}

Status EnsureSchema(SqliteDb& db, const std::string& path) {
  COUPLER_ASSIGN_OR_RETURN(WriteTransaction txn, WriteTransaction::Begin(db));
  COUPLER_ASSIGN_OR_RETURN(SchemaInfo info, ReadAndValidate(db, path));
  if (info.user_version == kSchemaVersion) return Status::Ok();  // rolls back an empty txn
  if (info.user_version == 0) {
    COUPLER_RETURN_IF_ERROR(db.Exec(kCreateTables));
  } else if (info.user_version == 1) {
    // Jobs submitted before keys existed have no submitter: only an admin may cancel them.
    // And finished jobs are restored from their row's counts; older rows show none.
    COUPLER_RETURN_IF_ERROR(db.Exec(
        "ALTER TABLE jobs ADD COLUMN submitted_by TEXT NOT NULL DEFAULT '';"
        "ALTER TABLE jobs ADD COLUMN tasks_total INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN tasks_done INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN tasks_failed INTEGER NOT NULL DEFAULT 0;"
        "ALTER TABLE jobs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;"
        "CREATE TABLE sent (seq INTEGER PRIMARY KEY, job_id TEXT NOT NULL, tasks BLOB NOT NULL);"
        "CREATE INDEX sent_by_job ON sent(job_id);"));
  }
  if (info.user_version == 1 || info.user_version == 2) {
    // Jobs from before submission ids have none: a retried submission cannot name them.
    COUPLER_RETURN_IF_ERROR(
        db.Exec("ALTER TABLE jobs ADD COLUMN submission_id TEXT NOT NULL DEFAULT '';"));
  }
  if (info.user_version >= 1 && info.user_version <= 4) {
    // Jobs admitted before have no plan: they are restored from their spec, as then.
    COUPLER_RETURN_IF_ERROR(db.Exec("ALTER TABLE jobs ADD COLUMN plan BLOB NOT NULL DEFAULT x'';"
                                    "ALTER TABLE jobs ADD COLUMN run_dir TEXT NOT NULL DEFAULT '';"
                                    "CREATE INDEX jobs_by_submission ON jobs(submission_id);"));
  }
  if (info.user_version >= 1 && info.user_version <= 5) {
    // Attempts sent before have no worker recorded: any worker reporting one may adopt it.
    COUPLER_RETURN_IF_ERROR(db.Exec("ALTER TABLE sent ADD COLUMN worker_id TEXT NOT NULL DEFAULT '';"
                                    "ALTER TABLE sent ADD COLUMN worker_key TEXT NOT NULL DEFAULT '';"));
  }
  if (info.user_version >= 1 && info.user_version <= 6) {
    // Gangs sent before record no ranks: a restart abandons them (retried from their
    // checkpoint), as then.
    COUPLER_RETURN_IF_ERROR(db.Exec("ALTER TABLE sent ADD COLUMN gang_ranks INTEGER NOT NULL DEFAULT 0;"));
  }
  if (info.user_version >= 1 && info.user_version <= 7) {
    // Older states recorded no hand-backs: every row is a send, as it was then.
    COUPLER_RETURN_IF_ERROR(db.Exec("ALTER TABLE sent ADD COLUMN returned INTEGER NOT NULL DEFAULT 0;"));
  }
  if (info.user_version >= 1 && info.user_version <= 8) {
    // Older states kept no counters (they count from 0 at this start, as every start did then)
    // and had no bans.
    COUPLER_RETURN_IF_ERROR(db.Exec(
        "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) "
        "WITHOUT ROWID;"
        "CREATE TABLE IF NOT EXISTS bans (worker_id TEXT PRIMARY KEY NOT NULL, reason TEXT NOT NULL, "
        "banned_by TEXT NOT NULL, banned_ms INTEGER NOT NULL) WITHOUT ROWID;"));
  }
  if (info.user_version >= 1 && info.user_version <= 9) {
    // Older states fenced no GPU: every GPU starts unfenced, its current counts as baseline.
    COUPLER_RETURN_IF_ERROR(db.Exec(
        "CREATE TABLE IF NOT EXISTS gpu_health (worker_id TEXT NOT NULL, gpu INTEGER NOT NULL, "
        "uuid TEXT NOT NULL, fence TEXT NOT NULL, fenced_ms INTEGER NOT NULL, ecc_seen INTEGER "
        "NOT NULL, xid_seen INTEGER NOT NULL, PRIMARY KEY (worker_id, gpu)) WITHOUT ROWID;"));
  }
  if (info.user_version >= 1 && info.user_version <= 10) {
    // Older states keep their per-row task tables, read before the log and never written again.
    COUPLER_RETURN_IF_ERROR(db.Exec(
        "CREATE TABLE IF NOT EXISTS task_log (seq INTEGER PRIMARY KEY, job_id TEXT NOT NULL, "
        "records BLOB NOT NULL);"
        "CREATE INDEX IF NOT EXISTS task_log_by_job ON task_log(job_id, seq);"));
  }
  // Older states start counting at 0: their marker records no generation, so nothing is
  // checked until the first commit records one.
  COUPLER_RETURN_IF_ERROR(db.Exec(kCreateGeneration));
  const std::string pragmas = "PRAGMA application_id = " + std::to_string(kApplicationId) +
                              "; PRAGMA user_version = " + std::to_string(kSchemaVersion) + ";";
  COUPLER_RETURN_IF_ERROR(db.Exec(pragmas.c_str()));
  Status status = txn.Commit();
  if (!status.ok()) return status.WithContext("create schema in " + path);
  return Status::Ok();
}

Result<uint64_t> ReadGeneration(SqliteDb& db) {
  COUPLER_ASSIGN_OR_RETURN(int64_t value,
                           QueryInt(db, "SELECT COALESCE(MAX(value), 0) FROM generation"));
  return static_cast<uint64_t>(value);
}

Status CheckSchemaForReading(SqliteDb& db, const std::string& path) {
  COUPLER_ASSIGN_OR_RETURN(SchemaInfo info, ReadAndValidate(db, path));
  if (info.user_version == 0) return NotFound(path + " holds no coupler state yet");
  return Status::Ok();
}

}  // namespace coupler::store
