#include "coordinator/store/state_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>

#include "coordinator/store/row_values.h"
#include "coordinator/store/state_files.h"
#include "coordinator/store/store_schema.h"
#include "coordinator/store/wal_checkpointer.h"
#include "runtime/logging.h"

namespace coupler::store {
namespace {

namespace fs = std::filesystem;

// Long enough to ride out another process's checkpoint or a reader's brief lock; short enough
// that a wedged peer surfaces as Unavailable rather than a hung coordinator.
constexpr int kBusyTimeoutMs = 5000;
// WAL frames after which a commit checkpoints: SQLite's own auto-checkpoint threshold, which
// the store's WAL hook takes over.
constexpr int kCheckpointPages = 1000;

constexpr const char* kPutJob =
    "INSERT OR REPLACE INTO jobs (id, number, name, spec_text, spec_path, base_dir, priority, "
    "state, error, submitted_ms, finished_ms, extra, submitted_by, submission_id, plan, run_dir) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
constexpr const char* kSetJobState =
    "UPDATE jobs SET state = ?, error = ?, finished_ms = ?, tasks_total = ?, tasks_done = ?, "
    "tasks_failed = ?, attempts = ? WHERE id = ?";
// One row per job per flush: its records in order (task_log.h).
constexpr const char* kInsertTaskLog = "INSERT INTO task_log (job_id, records) VALUES (?, ?)";
// Compare-and-set: the generation moves only from the value this writer last wrote or read. It is
// the store's fencing token: a writer opened later bumps it at once, so an older writer that is
// still running (its lock taken over without its knowing) changes nothing and is fenced.
constexpr const char* kSetGeneration = "UPDATE generation SET value = ? WHERE id = 1 AND value = ?";

// The digits at the end of a job id, if there are 1..18 of them (so they fit an int64).
std::optional<int64_t> JobNumberFromId(std::string_view id) {
  size_t start = id.size();
  while (start > 0 && id[start - 1] >= '0' && id[start - 1] <= '9') --start;
  const size_t digits = id.size() - start;
  if (digits == 0 || digits > 18) return std::nullopt;
  int64_t n = 0;
  for (size_t i = start; i < id.size(); ++i) n = n * 10 + (id[i] - '0');
  return n;
}

// Checked before SQLite sees the dir, so the message names the dir and the real reason rather
// than SQLite's generic "unable to open database file".
Status PrepareDir(const std::string& dir, OpenMode mode) {
  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return Unavailable("state dir " + dir + " is not accessible: " + ec.message());
  }
  if (fs::exists(st) && !fs::is_directory(st)) {
    return InvalidArgument("state dir " + dir + " is not a directory");
  }
  if (mode == OpenMode::kReadOnly) {
    if (!fs::exists(st)) return NotFound("state dir " + dir + " does not exist");
    return Status::Ok();
  }
  if (!fs::exists(st)) {
    fs::create_directories(dir, ec);
    if (ec) return Unavailable("cannot create state dir " + dir + ": " + ec.message());
  }
  // WAL needs to create DIR/coupler.db-wal and -shm beside the database, not just write to it.
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Unavailable("state dir " + dir + " is not writable: " + std::strerror(errno));
  }
  // The specs in it carry their commands (and whatever secrets those hold) and its keys/ the
  // coordinator's secret: the owner's alone, also when an older version left it 0755.
  if (::chmod(dir.c_str(), 0700) != 0) {
    return Unavailable("cannot make state dir " + dir + " private: " + std::strerror(errno));
  }
  return Status::Ok();
}

// Creates the database file 0600 before SQLite does (it would follow the umask), and tightens
// files an older version left readable. SQLite gives the -wal and -shm files the database
// file's mode.
Status MakeDbPrivate(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable("cannot open state db " + path + ": " + std::strerror(errno));
  const int rc = ::fchmod(fd, 0600);
  ::close(fd);
  if (rc != 0) return Unavailable("cannot make " + path + " private: " + std::strerror(errno));
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string side = path + suffix;
    if (::access(side.c_str(), F_OK) == 0) ::chmod(side.c_str(), 0600);
  }
  return Status::Ok();
}

Status ConfigureForWriting(SqliteDb& db, const std::string& path) {
  // journal_mode answers with the mode it ended up in; a filesystem without shared memory
  // support (some network mounts) stays in another mode, and that is not safe for our readers.
  COUPLER_ASSIGN_OR_RETURN(SqliteStatement wal,
                           SqliteStatement::Prepare(db.get(), "PRAGMA journal_mode = WAL"));
  COUPLER_ASSIGN_OR_RETURN(bool row, wal.Step());
  std::string mode = row ? wal.ColumnText(0) : std::string();
  if (mode != "wal") {
    return Unavailable("cannot put " + path + " in WAL mode (journal_mode is '" + mode +
                       "'); use a state dir on a local filesystem");
  }
  COUPLER_RETURN_IF_ERROR(db.Exec("PRAGMA synchronous = NORMAL"));
  const std::string limit = "PRAGMA journal_size_limit = " + std::to_string(kJournalSizeLimit);
  return db.Exec(limit.c_str());
}

// The writer's generation at open: what the database holds, checked against what the marker
// recorded. Runs before anything bumps the generation.
Result<CommitGeneration> OpenGeneration(SqliteDb& db, const std::string& dir,
                                        const std::string& path, LostCommits lost) {
  COUPLER_ASSIGN_OR_RETURN(uint64_t found, ReadGeneration(db));
  CommitGeneration now{found, 0, CurrentBootId()};
  const std::optional<CommitGeneration> recorded = ReadCommitGeneration(dir);
  if (recorded) {
    Status check = CheckCommitGeneration(dir, path, *recorded, found, now.boot_id);
    if (!check.ok()) {
      if (lost == LostCommits::kRefuse) return check;
      Logger("store")->warn("{} — starting anyway, as {} asks: what those commits recorded is "
                            "forgotten",
                            check.message(), kAcceptStateLossFlag);
    }
    now.durable = std::min(recorded->durable, found);
  }
  if (CheckpointCompletes(db.get())) now.durable = found;
  return now;
}

}  // namespace

Result<std::unique_ptr<StateStore>> StateStore::Open(const std::string& dir, OpenMode mode,
                                                     LostCommits lost) {
  COUPLER_RETURN_IF_ERROR(PrepareDir(dir, mode));
  const std::string path = (fs::path(dir) / kFileName).string();
  const bool writing = mode == OpenMode::kReadWrite;
  if (!writing && !fs::exists(path)) {
    return NotFound("no coupler state in " + dir + " (no " + std::string(kFileName) + ")");
  }

  // The lock before any file is looked at: what a second writer would check, another one owns.
  StateDirLock lock;
  if (writing) {
    COUPLER_ASSIGN_OR_RETURN(lock, StateDirLock::Acquire(dir));
  }
  COUPLER_RETURN_IF_ERROR(CheckStateFiles(dir, kFileName));
  if (writing) COUPLER_RETURN_IF_ERROR(MakeDbPrivate(path));
  // NOMUTEX: one owner per connection (see the class comment), so SQLite's own locking is waste.
  const int flags = (writing ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) |
                    SQLITE_OPEN_NOMUTEX;
  Result<SqliteDb> opened = SqliteDb::Open(path, flags);
  if (!opened.ok()) return opened.status().WithContext("open state db");
  SqliteDb db = std::move(opened).value();
  // SQLite quietly opens a write-protected file read-only; every write would then fail.
  if (writing && sqlite3_db_readonly(db.get(), "main") == 1) {
    return Unavailable("state db " + path + " is not writable (opened read-only)");
  }
  if (int rc = sqlite3_busy_timeout(db.get(), kBusyTimeoutMs); rc != SQLITE_OK) {
    return SqliteError(rc, "sqlite3_busy_timeout", db.get());
  }

  CommitGeneration generation;
  if (writing) {
    // Refuse foreign or newer files before the WAL switch writes to them.
    COUPLER_RETURN_IF_ERROR(CheckSchema(db, path));
    COUPLER_RETURN_IF_ERROR(ConfigureForWriting(db, path));
    COUPLER_RETURN_IF_ERROR(EnsureSchema(db, path));
    COUPLER_ASSIGN_OR_RETURN(generation, OpenGeneration(db, dir, path, lost));
    // Also the marker's first writing: from here on a missing database is damage.
    COUPLER_RETURN_IF_ERROR(WriteCommitGeneration(dir, path, generation));
  } else {
    COUPLER_RETURN_IF_ERROR(CheckSchemaForReading(db, path));
  }

  std::unique_ptr<StateStore> store(
      new StateStore(std::move(lock), dir, path, mode, std::move(db), std::move(generation)));
  COUPLER_RETURN_IF_ERROR(store->PrepareStatements());
  // Replaces SQLite's auto-checkpoint (AfterCommit asks the checkpointer's thread instead).
  if (writing) {
    COUPLER_ASSIGN_OR_RETURN(store->checkpointer_,
                             WalCheckpointer::Start(dir, path, store->generation_));
    sqlite3_wal_hook(store->db_.get(), &StateStore::OnWalCommit, store.get());
    // Every writer's start moves the generation on: a writer still running from before (one
    // whose lock was taken over) then finds it moved at its next write and is fenced.
    COUPLER_RETURN_IF_ERROR(
        store->WriteWithBuffered("take the state over", [] { return Status::Ok(); }));
  }
  return store;
}

StateStore::StateStore(StateDirLock lock, std::string dir, std::string path, OpenMode mode,
                       SqliteDb db, CommitGeneration generation)
    : lock_(std::move(lock)),
      dir_(std::move(dir)),
      path_(std::move(path)),
      mode_(mode),
      generation_(std::move(generation)),
      db_(std::move(db)) {}

int StateStore::OnWalCommit(void* self, sqlite3* /*db*/, const char* /*name*/, int pages) {
  static_cast<StateStore*>(self)->wal_pages_ = pages;
  return SQLITE_OK;
}

void StateStore::AfterCommit() {
  checkpointer_->Committed(generation_.committed, wal_pages_ >= kCheckpointPages);
  generation_.durable = checkpointer_->durable();
}

void StateStore::Settle() {
  if (!checkpointer_) return;
  checkpointer_->Settle();
  generation_.durable = checkpointer_->durable();
}

StateStore::~StateStore() = default;

Status StateStore::PrepareStatements() {
  struct Entry {
    SqliteStatement* stmt;
    const char* sql;
  };
  const Entry entries[] = {
      {&put_job_, kPutJob},
      {&set_job_state_, kSetJobState},
      {&set_generation_, kSetGeneration},
  };
  for (const Entry& e : entries) {
    COUPLER_ASSIGN_OR_RETURN(*e.stmt, SqliteStatement::Prepare(db_.get(), e.sql));
  }
  // A reader may open a state from before the log (it migrates nothing); a writer's has it.
  if (mode_ == OpenMode::kReadWrite) {
    COUPLER_ASSIGN_OR_RETURN(insert_task_log_, SqliteStatement::Prepare(db_.get(), kInsertTaskLog));
  }
  COUPLER_RETURN_IF_ERROR(PrepareReads());
  COUPLER_RETURN_IF_ERROR(counters_.Prepare(db_.get()));
  COUPLER_RETURN_IF_ERROR(bans_.Prepare(db_.get()));
  return gpu_health_.Prepare(db_.get());
}

Status StateStore::CheckWritable() const {
  if (mode_ == OpenMode::kReadOnly) return InvalidArgument(path_ + " was opened read-only");
  return Status::Ok();
}

template <typename Fn>
Status StateStore::WriteWithBuffered(const std::string& what, Fn&& also) {
  COUPLER_RETURN_IF_ERROR(CheckWritable());
  const std::string context = what + " in " + path_;
  Result<WriteTransaction> txn = WriteTransaction::Begin(db_);
  if (!txn.ok()) return txn.status().WithContext(context);
  Status status = WriteBufferedRows();
  if (status.ok()) status = also();
  if (status.ok()) status = BumpGeneration();
  if (status.ok()) status = txn->Commit();
  if (!status.ok()) return status.WithContext(context);  // txn's destructor rolls back
  ++generation_.committed;
  log_.Clear();
  counters_.Committed();
  AfterCommit();
  return Status::Ok();
}

Result<bool> StateStore::CheckTakenOver() {
  if (fenced_) return true;
  COUPLER_ASSIGN_OR_RETURN(const uint64_t found, ReadGeneration(db_));
  if (found == generation_.committed) return false;
  fenced_ = true;
  fenced_message_ = "fenced: another coordinator has written " + path_ + " since this one " +
                    "opened it (its generation " + std::to_string(found) + ", this one's " +
                    std::to_string(generation_.committed) +
                    "); this coordinator writes nothing more and must stop";
  return true;
}

Status StateStore::BumpGeneration() {
  if (fenced_) return Aborted(fenced_message_);
  StatementReset reset(set_generation_);
  set_generation_.BindInt64(1, ToSql(generation_.committed + 1));
  set_generation_.BindInt64(2, ToSql(generation_.committed));
  COUPLER_RETURN_IF_ERROR(set_generation_.Step().status());
  if (sqlite3_changes(db_.get()) == 1) return Status::Ok();
  const Result<uint64_t> found = ReadGeneration(db_);
  fenced_ = true;
  fenced_message_ =
      "fenced: another coordinator has written " + path_ + " since this one opened it (its " +
      "generation " + (found.ok() ? std::to_string(*found) : std::string("unknown")) +
      ", this one's " + std::to_string(generation_.committed) +
      "); this coordinator writes nothing more and must stop";
  return Aborted(fenced_message_);
}

Status StateStore::WriteBufferedRows() {
  for (const TaskLogBuffer::JobBlob& job : log_.jobs()) {
    StatementReset reset(insert_task_log_);
    insert_task_log_.BindText(1, job.job_id);
    insert_task_log_.BindBlob(2, job.blob);
    COUPLER_RETURN_IF_ERROR(insert_task_log_.Step().status());
  }
  return counters_.WriteBuffered();
}

Status StateStore::PutJob(const JobRecord& job) {
  if (job.id.empty()) return InvalidArgument("PutJob: job id is empty");
  return WriteWithBuffered("put job " + job.id, [&]() -> Status {
    StatementReset reset(put_job_);
    put_job_.BindText(1, job.id);
    // Left unbound (NULL) when the id has no trailing number.
    if (std::optional<int64_t> n = JobNumberFromId(job.id)) put_job_.BindInt64(2, *n);
    put_job_.BindText(3, job.name);
    put_job_.BindText(4, job.spec_text);
    put_job_.BindText(5, job.spec_path);
    put_job_.BindText(6, job.base_dir);
    put_job_.BindInt64(7, job.priority);
    put_job_.BindText(8, job.state);
    put_job_.BindText(9, job.error);
    put_job_.BindInt64(10, job.submitted_ms);
    put_job_.BindInt64(11, job.finished_ms);
    put_job_.BindBlob(12, job.extra);
    put_job_.BindText(13, job.submitted_by);
    put_job_.BindText(14, job.submission_id);
    put_job_.BindBlob(15, job.plan);
    put_job_.BindText(16, job.run_dir);
    return put_job_.Step().status();
  });
}

Status StateStore::SetJobState(const std::string& id, const std::string& state,
                               const std::string& error, int64_t finished_ms,
                               const JobCounts& counts) {
  return WriteWithBuffered("set state of job " + id, [&]() -> Status {
    StatementReset reset(set_job_state_);
    set_job_state_.BindText(1, state);
    set_job_state_.BindText(2, error);
    set_job_state_.BindInt64(3, finished_ms);
    set_job_state_.BindInt64(4, ToSql(counts.tasks_total));
    set_job_state_.BindInt64(5, ToSql(counts.tasks_done));
    set_job_state_.BindInt64(6, ToSql(counts.tasks_failed));
    set_job_state_.BindInt64(7, ToSql(counts.attempts));
    set_job_state_.BindText(8, id);
    COUPLER_RETURN_IF_ERROR(set_job_state_.Step().status());
    // Fails the transaction too: buffered rows are kept for the next try rather than half-applied.
    if (sqlite3_changes(db_.get()) == 0) return NotFound("no job " + id);
    return Status::Ok();
  });
}


Status StateStore::PutBan(const BanRecord& ban) {
  return WriteWithBuffered("ban worker " + ban.worker_id, [&] { return bans_.Put(ban); });
}

Status StateStore::RemoveBan(const std::string& worker_id) {
  return WriteWithBuffered("unban worker " + worker_id, [&] { return bans_.Remove(worker_id); });
}

Status StateStore::PutGpuHealth(const std::vector<GpuHealthRecord>& records) {
  if (records.empty()) return Status::Ok();
  return WriteWithBuffered("record the health of " + std::to_string(records.size()) + " GPU(s)", [&] {
    for (const GpuHealthRecord& r : records) COUPLER_RETURN_IF_ERROR(gpu_health_.Put(r));
    return Status::Ok();
  });
}

Status StateStore::Flush() {
  if (pending() == 0) return Status::Ok();
  return WriteWithBuffered("flush " + std::to_string(pending()) + " buffered rows",
                           [] { return Status::Ok(); });
}

}  // namespace coupler::store
