// A job's task history — its commits, commits taken back, ended attempts and attempts sent — as
// one ordered log: each flush of the state writes one row per job (table task_log), a blob of
// that flush's records in the order they happened. A flush of a busy pool used to write a row
// per commit and per assignment message (about 3.7 µs of the event loop each, three B-tree
// inserts per task with the index); now it writes a row per job.
//
// A restart replays the log: the first commit of a task wins (later ones were duplicates the
// old table's INSERT OR IGNORE dropped), a revoke removes the task's commit so that its next
// attempt commits anew. Replaying in write order gives exactly what the per-row tables held.
//
// Blob format, version 1 (pinned: states on disk hold it):
//   byte 1 (the version), then records, each a kind byte (TaskLogRecord) and its fields.
//   Integers are LEB128 varints; ended_ms is zigzag; kernel_ms is 8 bytes, little-endian IEEE.
//   Strings that repeat (worker ids and keys, devices, outcomes) are references into the blob's
//   own table: varint 0 then the string (a new entry), or varint n for the n-th entry. Other
//   strings (errors, output paths) are a varint length and their bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "coordinator/store/records.h"
#include "runtime/status.h"

namespace coupler::store {

enum class TaskLogRecord : uint8_t {
  kCommit = 1,   // task, attempt, paths, rows_in, rows_out, device, kernel_ms, bytes, worker
  kRevoke = 2,   // task
  kAttempt = 3,  // task, attempt, worker, outcome, error, ended_ms
  kSent = 4,     // worker, key, gang_ranks, returned, count, (task, attempt) * count
};

inline constexpr uint8_t kTaskLogFormat = 1;

// One flush's records, one blob per job, appended in call order. Not thread-safe.
class TaskLogBuffer {
 public:
  struct JobBlob {
    std::string job_id;
    std::string blob;
    size_t records = 0;
  };

  void AddCommit(const TaskCommit& c);
  void Revoke(const std::string& job_id, uint64_t task_id);
  void AddAttempt(const AttemptRecord& a);
  void AddSent(const SentAttempts& s);

  size_t pending() const { return records_; }
  const std::vector<JobBlob>& jobs() const { return jobs_; }
  void Clear();

 private:
  struct Writer {
    std::unordered_map<std::string, uint32_t> strings;  // the blob's table: string → 1-based
  };
  JobBlob& For(const std::string& job_id, Writer** writer);
  static void PutRef(std::string_view s, Writer& w, std::string& out);

  std::vector<JobBlob> jobs_;
  std::vector<Writer> writers_;  // parallel to jobs_
  size_t last_ = 0;              // the job written last: most flushes hold one job
  size_t records_ = 0;
};

// A committed task as a restart needs it: which, under which attempt, on what device (an index
// into TaskHistory::devices). A restart of a 10M-task job holds millions: the whole record
// (TaskCommit, ~170 bytes with its strings) is read only by StateStore::LoadCommits.
struct CommittedTask {
  uint64_t task_id = 0;
  uint32_t attempt = 0;
  uint32_t device = 0;
  friend bool operator==(const CommittedTask&, const CommittedTask&) = default;
};

// A job's history as a restart and `coupler status` read it.
struct TaskHistory {
  // The live commit of each task, by task id.
  std::vector<CommittedTask> commits = {};
  // Every ended attempt, by task then attempt (ties in write order).
  std::vector<AttemptRecord> attempts = {};
  // Every attempt sent and every one given back, in write order.
  std::vector<SentAttempt> sent = {};
  // The devices commits ran on; "" (an index past the end too) is the CPU.
  std::vector<std::string> devices = {};

  const std::string& device_of(const CommittedTask& c) const;
};

// Folds a job's log into its history: rows of the tables from before the log (schema 10 and
// older) first, then blobs in write order.
class TaskHistoryReplay {
 public:
  // `whole_commits`: also keep each live commit's whole record (FinishWholeCommits).
  explicit TaskHistoryReplay(std::string job_id, bool whole_commits = false)
      : job_id_(std::move(job_id)), whole_(whole_commits) {}

  // Older tables' rows: a commit (the table held one per task), an attempt, a sent attempt.
  void AddOlderCommit(TaskCommit c);
  void AddOlderAttempt(AttemptRecord a);
  void AddOlderSent(SentAttempt s);
  // One task_log row. A damaged blob is an Internal error naming the job.
  Status AddBlob(std::string_view blob);
  TaskHistory Finish() &&;
  // The live commits' whole records, by task id; empty unless asked for at construction.
  std::vector<TaskCommit> FinishWholeCommits() &&;

 private:
  Status Damaged(const char* what) const;
  void AddCommit(TaskCommit c);
  // The positions (into commits_) of the live commit of each task, in task order: the first
  // commit of a task wins, a revoke removes the one before it.
  std::vector<size_t> LiveCommits() const;

  std::string job_id_;
  bool whole_;
  TaskHistory history_;
  std::vector<CommittedTask> commits_;   // every commit read, in write order
  std::vector<TaskCommit> whole_commits_;  // the same, whole, when whole_
  // Each revoke: its task, and how many commits were read before it (it undoes only those).
  std::vector<std::pair<uint64_t, size_t>> revokes_;
};

}  // namespace coupler::store
