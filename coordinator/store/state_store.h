// Durable coordinator state — jobs, each task's committed result, every ended attempt — in one
// SQLite file (DIR/coupler.db, WAL), so a restarted coordinator resumes where it stopped.
// Job rows go to disk at once; task rows are buffered and written together by Flush.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/status.h"
#include "coordinator/store/commit_generation.h"
#include "coordinator/store/ban_rows.h"
#include "coordinator/store/gpu_health_rows.h"
#include "coordinator/store/counter_rows.h"
#include "coordinator/store/records.h"
#include "coordinator/store/sqlite_db.h"
#include "coordinator/store/state_dir_lock.h"
#include "coordinator/store/task_log.h"
#include "coordinator/store/wal_checkpointer.h"

namespace coupler::store {

enum class OpenMode {
  kReadWrite,  // the coordinator: creates the dir and the schema
  kReadOnly,   // anyone else (status tools): reads while the coordinator writes, thanks to WAL
};

// What a writer's Open does when the database holds fewer commits than the state marker
// recorded (its WAL deleted, an older copy put back; see commit_generation.h).
enum class LostCommits {
  kRefuse,  // InvalidArgument naming the files, both generations and what to do
  kAccept,  // the operator said so: start with what the database holds, with a warning
};

// Durability contract (grouped commit): a task row is durable once a Flush returns OK, or once a
// PutJob/SetJobState returns OK, since those write everything buffered before them in the same
// transaction — so what is on disk is always a prefix of the calls made, and a job is never
// recorded finished while the commits that finished it are still only in memory. Rows still
// buffered when the store is destroyed are lost, as in a crash: call Flush before shutting down.
// Commits are synchronous=NORMAL: durable against a process crash at once, against power loss
// from the next WAL checkpoint; never an fsync per task.
// Every write transaction also bumps the database's commit generation, and the state marker
// (coupler.state) records it, renamed into place after each commit (no sync either), so a
// writer's Open refuses a database that lost commits a process crash could not have lost.
//
// Not thread-safe: one owner (the coordinator's event loop) calls everything.
class StateStore {
 public:
  static constexpr const char* kFileName = "coupler.db";

  // Opens DIR/coupler.db, creating both in kReadWrite mode. A writer first takes the
  // directory's lock (StateDirLock) and holds it until the store is destroyed: a second writer
  // on the same directory gets Unavailable naming the holder. Errors say which dir or file and
  // why (not a directory, not writable, not a SQLite file, written by a newer coupler, lost
  // commits unless `lost` is kAccept, ...).
  static Result<std::unique_ptr<StateStore>> Open(const std::string& dir,
                                                  OpenMode mode = OpenMode::kReadWrite,
                                                  LostCommits lost = LostCommits::kRefuse);

  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;
  ~StateStore();

  const std::string& path() const { return path_; }

  // Inserts or replaces the job with this id, immediately (with everything buffered before it).
  Status PutJob(const JobRecord& job);
  // NotFound if no job has this id.
  // `counts`: the job's final counts, kept with a finished state (see JobRecord::counts).
  Status SetJobState(const std::string& id, const std::string& state, const std::string& error,
                     int64_t finished_ms, const JobCounts& counts = {});

  // Buffered in memory until the next Flush/PutJob/SetJobState, then written as the job's task
  // log (task_log.h): one row per job per flush. A commit for a (job, task) that already has
  // one — on disk or earlier in the buffer — counts for nothing when read back.
  void AddCommit(const TaskCommit& commit) { log_.AddCommit(commit); }
  // A task's commit taken back (its output was lost: the task runs again and commits anew):
  // the next commit of the task, from this call on, takes its place.
  void RevokeCommit(const std::string& job_id, uint64_t task_id) { log_.Revoke(job_id, task_id); }
  void AddAttempt(const AttemptRecord& attempt) { log_.AddAttempt(attempt); }
  void AddSent(const SentAttempts& sent) { log_.AddSent(sent); }
  // The pool's counters (counter_rows.h): buffered like the rows above, written with them.
  void SetCounters(const std::map<std::string, uint64_t>& values) { counters_.Set(values); }
  Result<std::map<std::string, uint64_t>> LoadCounters() { return counters_.Load(); }
  // Banned worker ids (ban_rows.h): written at once, with everything buffered before.
  Status PutBan(const BanRecord& ban);
  Status RemoveBan(const std::string& worker_id);
  Result<std::vector<BanRecord>> LoadBans() { return bans_.Load(); }
  // Worker GPUs' fences and error baselines (gpu_health_rows.h): written at once, likewise.
  Status PutGpuHealth(const std::vector<GpuHealthRecord>& records);
  Result<std::vector<GpuHealthRecord>> LoadGpuHealth() { return gpu_health_.Load(); }
  // Buffered rows not yet written.
  size_t pending() const { return log_.pending() + counters_.pending(); }

  // True once a write found that another writer opened the state after this one (its lock
  // taken over: the lock file deleted, a filesystem without working locks). Every write since
  // has been refused with Aborted and nothing of it written; the owner must stop.
  bool fenced() const { return fenced_; }
  // Aborted saying who moved the generation, once fenced(); OK before.
  Status fence() const { return fenced_ ? Aborted(fenced_message_) : Status::Ok(); }
  // Reads the generation now: true (and fenced() from then on) when another writer has moved
  // it since this one's last commit. A worker speaking for a newer epoch asks this: it may have
  // registered with a coordinator that took this state over, or with one of another state.
  Result<bool> CheckTakenOver();

  // Writes every buffered row in one transaction. On error nothing is written and the rows stay
  // buffered, so the caller may retry (a busy database returns Unavailable).
  Status Flush();

  // Only what is on disk; buffered rows are not seen.
  Result<std::vector<JobRecord>> LoadJobs();  // by job number, then id; `plan` left empty
  // The jobs not finished (queued, running), in full but for their plans: what a start restores.
  Result<std::vector<JobRecord>> LoadUnfinishedJobs();
  // Newest first (by job number), at most `limit` (0: all), only those in one of `states`
  // (none: any): summaries, their spec, extra and plan left empty.
  Result<std::vector<JobRecord>> ListJobs(const std::vector<std::string>& states, uint32_t limit);
  // How many jobs the state holds, by state.
  Result<std::map<std::string, uint64_t>> CountJobsByState();
  // The job a submission id made, if any.
  Result<std::optional<std::string>> FindJobBySubmission(const std::string& submission_id);
  // One job's row with its plan; nullopt when there is none.
  Result<std::optional<JobRecord>> LoadJob(const std::string& job_id);
  // A job's admitted plan (JobRecord::plan); empty for a job admitted before plans were kept.
  Result<std::string> LoadPlan(const std::string& job_id);
  // A job's task log replayed (task_log.h): its live commits by task id (what a restart needs
  // of each), its ended attempts by task and attempt, and every (task, attempt) ever sent for it
  // and every one given back unstarted (returned), in the order they were written. One read for
  // a restart.
  Result<TaskHistory> LoadTaskHistory(const std::string& job_id);
  // The live commits' whole records (outputs, rows, worker), by task id.
  Result<std::vector<TaskCommit>> LoadCommits(const std::string& job_id);
  // The other parts of LoadTaskHistory alone.
  Result<std::vector<AttemptRecord>> LoadAttempts(const std::string& job_id);
  Result<std::vector<SentAttempt>> LoadSent(const std::string& job_id);

  // 1 + the largest number at the end of a stored job id ("j-000041" → 42), 1 when there is
  // none, so ids stay unique across restarts. Counts stored jobs only.
  Result<uint64_t> NextJobNumber();

  // The generation of the last commit (0 before any), and of the last one a completed
  // checkpoint synced into the database file.
  uint64_t generation() const { return generation_.committed; }
  uint64_t durable_generation() const { return generation_.durable; }
  // Waits for the checkpointer's thread (wal_checkpointer.h) to finish what the commits so far
  // asked of it: the marker written, a checkpoint run. The loop never needs to.
  void Settle();

 private:
  StateStore(StateDirLock lock, std::string dir, std::string path, OpenMode mode, SqliteDb db,
             CommitGeneration generation);
  Status PrepareStatements();
  Status PrepareReads();  // state_store_reads.cc
  // The rows of a schema-10 state's per-row tables (older_task_tables_), before its log.
  Status LoadOlderTaskRows(const std::string& job_id, TaskHistoryReplay& replay);
  // The job's older rows and log, into `replay`.
  Status ReplayTaskLog(const std::string& job_id, TaskHistoryReplay& replay);
  Status CheckWritable() const;
  // Moves the generation one on inside the open transaction, or finds that another writer
  // moved it (Aborted; fenced() from then on).
  Status BumpGeneration();
  // Writes the buffered rows, then runs `also`, in one transaction; the buffer is cleared only if
  // it commits. `what` names the operation in errors.
  template <typename Fn>
  Status WriteWithBuffered(const std::string& what, Fn&& also);
  Status WriteBufferedRows();
  // After a commit: asks the checkpointer to record the generation in the marker and, once
  // the WAL is long, to copy it into the database file (in place of SQLite's auto-checkpoint,
  // so the store knows what is synced).
  void AfterCommit();
  static int OnWalCommit(void* self, sqlite3* db, const char* name, int pages);

  // A writer's hold on the directory (state_dir_lock.h), declared first so that it is released
  // last, after the database is closed. Empty for a reader.
  StateDirLock lock_;
  std::string dir_;
  std::string path_;
  OpenMode mode_;
  TaskLogBuffer log_;  // the task rows of the next flush
  // A state from schema 10 or older keeps its per-row tables (commits, attempts, sent), read
  // before the log and never written again.
  bool older_task_tables_ = false;
  bool task_log_table_ = false;  // false only for a reader of a state from before schema 11
  CommitGeneration generation_;
  int wal_pages_ = 0;          // frames in the WAL after the last commit (OnWalCommit)
  bool fenced_ = false;          // another writer took the state over (BumpGeneration)
  std::string fenced_message_;  // what fenced it, once fenced_

  // The connection first, so it is destroyed after the statements that borrow it.
  SqliteDb db_;
  SqliteStatement put_job_;
  SqliteStatement set_job_state_;
  SqliteStatement insert_task_log_;
  SqliteStatement load_task_log_;
  SqliteStatement load_jobs_;
  SqliteStatement load_commits_;
  SqliteStatement load_attempts_;
  SqliteStatement load_sent_;
  SqliteStatement next_job_number_;
  SqliteStatement set_generation_;
  SqliteStatement load_job_;
  SqliteStatement load_plan_;
  SqliteStatement load_unfinished_;
  SqliteStatement list_jobs_;
  SqliteStatement count_jobs_;
  SqliteStatement find_submission_;
  CounterRows counters_;
  BanRows bans_;
  GpuHealthRows gpu_health_;
  // A writer's, last: its thread is stopped (writing the last marker) before the connection
  // closes and the directory's lock is released.
  std::unique_ptr<WalCheckpointer> checkpointer_;
};

}  // namespace coupler::store
