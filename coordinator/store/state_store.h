// Durable coordinator state — jobs, each task's committed result, every ended attempt — in one
// SQLite file (DIR/coupler.db, WAL), so a restarted coordinator resumes where it stopped.
// Job rows go to disk at once; task rows are buffered and written together by Flush.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/status.h"
#include "coordinator/store/records.h"
#include "coordinator/store/sqlite_db.h"

namespace coupler::store {

enum class OpenMode {
  kReadWrite,  // the coordinator: creates the dir and the schema
  kReadOnly,   // anyone else (status tools): reads while the coordinator writes, thanks to WAL
};

// Durability contract (grouped commit): a task row is durable once a Flush returns OK, or once a
// PutJob/SetJobState returns OK, since those write everything buffered before them in the same
// transaction — so what is on disk is always a prefix of the calls made, and a job is never
// recorded finished while the commits that finished it are still only in memory. Rows still
// buffered when the store is destroyed are lost, as in a crash: call Flush before shutting down.
// Commits are synchronous=NORMAL: durable against a process crash at once, against power loss
// from the next WAL checkpoint; never an fsync per task.
//
// Not thread-safe: one owner (the coordinator's event loop) calls everything.
class StateStore {
 public:
  static constexpr const char* kFileName = "coupler.db";

  // Opens DIR/coupler.db, creating both in kReadWrite mode. Errors say which dir or file and why
  // (not a directory, not writable, not a SQLite file, written by a newer coupler, ...).
  static Result<std::unique_ptr<StateStore>> Open(const std::string& dir,
                                                  OpenMode mode = OpenMode::kReadWrite);

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

  // Buffered in memory until the next Flush/PutJob/SetJobState. A commit for a (job, task) that
  // already has one — on disk or earlier in the buffer — is dropped when written.
  void AddCommit(TaskCommit commit);
  void AddAttempt(AttemptRecord attempt);
  void AddSent(SentAttempts sent);
  // Buffered rows not yet written.
  size_t pending() const { return commits_.size() + attempts_.size() + sent_.size(); }

  // Writes every buffered row in one transaction. On error nothing is written and the rows stay
  // buffered, so the caller may retry (a busy database returns Unavailable).
  Status Flush();

  // Only what is on disk; buffered rows are not seen.
  Result<std::vector<JobRecord>> LoadJobs();  // by job number, then id
  // By task_id (compared as SQLite's signed 64-bit: ids from 2^63 up would come first).
  Result<std::vector<TaskCommit>> LoadCommits(const std::string& job_id);
  Result<std::vector<AttemptRecord>> LoadAttempts(const std::string& job_id);  // by task, attempt
  // Every (task, attempt) ever sent for the job, in no particular order.
  Result<std::vector<std::pair<uint64_t, uint32_t>>> LoadSent(const std::string& job_id);

  // 1 + the largest number at the end of a stored job id ("j-000041" → 42), 1 when there is
  // none, so ids stay unique across restarts. Counts stored jobs only.
  Result<uint64_t> NextJobNumber();

 private:
  StateStore(std::string path, OpenMode mode, SqliteDb db);
  Status PrepareStatements();
  Status CheckWritable() const;
  // Writes the buffered rows, then runs `also`, in one transaction; the buffer is cleared only if
  // it commits. `what` names the operation in errors.
  template <typename Fn>
  Status WriteWithBuffered(const std::string& what, Fn&& also);
  Status WriteBufferedRows();

  std::string path_;
  OpenMode mode_;
  std::vector<TaskCommit> commits_;
  std::vector<AttemptRecord> attempts_;
  std::vector<SentAttempts> sent_;
  std::string paths_scratch_;  // reused encoding buffer: one allocation per flush, not per row

  // The connection first, so it is destroyed after the statements that borrow it.
  SqliteDb db_;
  SqliteStatement put_job_;
  SqliteStatement set_job_state_;
  SqliteStatement insert_commit_;
  SqliteStatement insert_attempt_;
  SqliteStatement load_jobs_;
  SqliteStatement load_commits_;
  SqliteStatement load_attempts_;
  SqliteStatement insert_sent_;
  SqliteStatement load_sent_;
  SqliteStatement next_job_number_;
};

}  // namespace coupler::store
