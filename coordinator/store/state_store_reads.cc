// The StateStore's reads: the jobs a start restores and the queries status and the API ask
// (state_store.cc holds the writes: buffered rows, commits and the generation fence).
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/store/path_list.h"
#include "coordinator/store/row_values.h"
#include "coordinator/store/state_store.h"

namespace coupler::store {
namespace {

constexpr const char* kLoadJobs =
    "SELECT id, name, spec_text, spec_path, base_dir, priority, state, error, submitted_ms, "
    "finished_ms, extra, submitted_by, tasks_total, tasks_done, tasks_failed, attempts, "
    "submission_id, run_dir FROM jobs "
    "ORDER BY number, id";
constexpr const char* kLoadJob =
    "SELECT id, name, spec_text, spec_path, base_dir, priority, state, error, submitted_ms, "
    "finished_ms, extra, submitted_by, tasks_total, tasks_done, tasks_failed, attempts, "
    "submission_id, run_dir, plan FROM jobs WHERE id = ?";
constexpr const char* kLoadPlan = "SELECT plan FROM jobs WHERE id = ?";
// The jobs a start restores to run: not finished.
constexpr const char* kLoadUnfinishedJobs =
    "SELECT id, name, spec_text, spec_path, base_dir, priority, state, error, submitted_ms, "
    "finished_ms, extra, submitted_by, tasks_total, tasks_done, tasks_failed, attempts, "
    "submission_id, run_dir FROM jobs WHERE state NOT IN ('succeeded', 'failed', 'cancelled') "
    "ORDER BY number, id";
// A page of summaries, newest first: the columns of kLoadJobs with the big ones left empty.
constexpr const char* kListJobs =
    "SELECT id, name, '', spec_path, base_dir, priority, state, error, submitted_ms, "
    "finished_ms, x'', submitted_by, tasks_total, tasks_done, tasks_failed, attempts, "
    "submission_id, run_dir FROM jobs WHERE (?1 = '' OR instr(?1, ',' || state || ',') > 0) "
    "ORDER BY number DESC, id DESC LIMIT ?2";
constexpr const char* kCountJobs = "SELECT state, COUNT(*) FROM jobs GROUP BY state";
constexpr const char* kFindSubmission = "SELECT id FROM jobs WHERE submission_id = ? LIMIT 1";
constexpr const char* kLoadCommits =
    "SELECT task_id, attempt, output_paths, rows_in, rows_out, device, kernel_ms, "
    "bytes_processed, worker_id FROM commits WHERE job_id = ? ORDER BY task_id";
constexpr const char* kLoadAttempts =
    "SELECT task_id, attempt, worker_id, outcome, error, ended_ms FROM attempts "
    "WHERE job_id = ? ORDER BY task_id, attempt, seq";
constexpr const char* kLoadSent =
    "SELECT tasks, worker_id, worker_key, gang_ranks, returned FROM sent WHERE job_id = ? "
    "ORDER BY seq";
constexpr const char* kLoadTaskLog = "SELECT records FROM task_log WHERE job_id = ? ORDER BY seq";
// A reader of a state from schema 10 or older (not migrated: readers never write) finds no
// task_log; a state created at 11 has no per-row tables.
constexpr const char* kTaskTables =
    "SELECT sum(name = 'commits'), sum(name = 'task_log') FROM sqlite_master WHERE type = 'table'";
constexpr const char* kNextJobNumber = "SELECT COALESCE(MAX(number), 0) + 1 FROM jobs";

}  // namespace

Status StateStore::PrepareReads() {
  struct Entry {
    SqliteStatement* stmt;
    const char* sql;
  };
  const Entry entries[] = {
      {&load_jobs_, kLoadJobs},
      {&load_job_, kLoadJob},
      {&load_plan_, kLoadPlan},
      {&load_unfinished_, kLoadUnfinishedJobs},
      {&list_jobs_, kListJobs},
      {&count_jobs_, kCountJobs},
      {&find_submission_, kFindSubmission},
      {&next_job_number_, kNextJobNumber},
  };
  for (const Entry& e : entries) {
    COUPLER_ASSIGN_OR_RETURN(*e.stmt, SqliteStatement::Prepare(db_.get(), e.sql));
  }
  COUPLER_ASSIGN_OR_RETURN(SqliteStatement tables, SqliteStatement::Prepare(db_.get(), kTaskTables));
  COUPLER_ASSIGN_OR_RETURN(const bool row, tables.Step());
  older_task_tables_ = row && tables.ColumnInt64(0) > 0;
  task_log_table_ = row && tables.ColumnInt64(1) > 0;
  if (task_log_table_) {
    COUPLER_ASSIGN_OR_RETURN(load_task_log_, SqliteStatement::Prepare(db_.get(), kLoadTaskLog));
  }
  if (!older_task_tables_) return Status::Ok();
  const Entry older_tables[] = {
      {&load_commits_, kLoadCommits},
      {&load_attempts_, kLoadAttempts},
      {&load_sent_, kLoadSent},
  };
  for (const Entry& e : older_tables) {
    COUPLER_ASSIGN_OR_RETURN(*e.stmt, SqliteStatement::Prepare(db_.get(), e.sql));
  }
  return Status::Ok();
}

namespace {

// The columns LoadJobs and LoadJob share, in that order.
JobRecord ReadJobRow(SqliteStatement& row) {
  JobRecord j;
  j.id = row.ColumnText(0);
  j.name = row.ColumnText(1);
  j.spec_text = row.ColumnText(2);
  j.spec_path = row.ColumnText(3);
  j.base_dir = row.ColumnText(4);
  j.priority = static_cast<int>(row.ColumnInt64(5));
  j.state = row.ColumnText(6);
  j.error = row.ColumnText(7);
  j.submitted_ms = row.ColumnInt64(8);
  j.finished_ms = row.ColumnInt64(9);
  j.extra = row.ColumnBlob(10);
  j.submitted_by = row.ColumnText(11);
  j.counts.tasks_total = FromSql(row.ColumnInt64(12));
  j.counts.tasks_done = FromSql(row.ColumnInt64(13));
  j.counts.tasks_failed = FromSql(row.ColumnInt64(14));
  j.counts.attempts = FromSql(row.ColumnInt64(15));
  j.submission_id = row.ColumnText(16);
  j.run_dir = row.ColumnText(17);
  return j;
}

}  // namespace

Result<std::vector<JobRecord>> StateStore::LoadJobs() {
  StatementReset reset(load_jobs_);
  std::vector<JobRecord> jobs;
  while (true) {
    Result<bool> row = load_jobs_.Step();
    if (!row.ok()) return row.status().WithContext("load jobs from " + path_);
    if (!*row) break;
    jobs.push_back(ReadJobRow(load_jobs_));
  }
  return jobs;
}

Result<std::vector<JobRecord>> StateStore::LoadUnfinishedJobs() {
  StatementReset reset(load_unfinished_);
  std::vector<JobRecord> jobs;
  while (true) {
    Result<bool> row = load_unfinished_.Step();
    if (!row.ok()) return row.status().WithContext("load unfinished jobs from " + path_);
    if (!*row) break;
    jobs.push_back(ReadJobRow(load_unfinished_));
  }
  return jobs;
}

Result<std::vector<JobRecord>> StateStore::ListJobs(const std::vector<std::string>& states,
                                                    uint32_t limit) {
  StatementReset reset(list_jobs_);
  // ",queued,running,": the query matches ",<state>," in it (one prepared statement for any
  // set of states; state names hold no comma).
  std::string wanted;
  for (const std::string& s : states) wanted += "," + s;
  if (!wanted.empty()) wanted += ",";
  list_jobs_.BindText(1, wanted);
  list_jobs_.BindInt64(2, limit == 0 ? -1 : static_cast<int64_t>(limit));  // -1: no limit
  std::vector<JobRecord> jobs;
  while (true) {
    Result<bool> row = list_jobs_.Step();
    if (!row.ok()) return row.status().WithContext("list jobs in " + path_);
    if (!*row) break;
    jobs.push_back(ReadJobRow(list_jobs_));
  }
  return jobs;
}

Result<std::map<std::string, uint64_t>> StateStore::CountJobsByState() {
  StatementReset reset(count_jobs_);
  std::map<std::string, uint64_t> counts;
  while (true) {
    Result<bool> row = count_jobs_.Step();
    if (!row.ok()) return row.status().WithContext("count jobs in " + path_);
    if (!*row) break;
    counts[count_jobs_.ColumnText(0)] = FromSql(count_jobs_.ColumnInt64(1));
  }
  return counts;
}

Result<std::optional<std::string>> StateStore::FindJobBySubmission(const std::string& submission_id) {
  StatementReset reset(find_submission_);
  find_submission_.BindText(1, submission_id);
  Result<bool> row = find_submission_.Step();
  if (!row.ok()) return row.status().WithContext("look up submission " + submission_id);
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(find_submission_.ColumnText(0));
}

Result<std::optional<JobRecord>> StateStore::LoadJob(const std::string& job_id) {
  StatementReset reset(load_job_);
  load_job_.BindText(1, job_id);
  Result<bool> row = load_job_.Step();
  if (!row.ok()) return row.status().WithContext("load job " + job_id + " from " + path_);
  if (!*row) return std::optional<JobRecord>();
  JobRecord j = ReadJobRow(load_job_);
  j.plan = load_job_.ColumnBlob(18);
  return std::optional<JobRecord>(std::move(j));
}

Result<std::string> StateStore::LoadPlan(const std::string& job_id) {
  StatementReset reset(load_plan_);
  load_plan_.BindText(1, job_id);
  Result<bool> row = load_plan_.Step();
  if (!row.ok()) return row.status().WithContext("load the plan of job " + job_id);
  if (!*row) return NotFound("no job " + job_id + " in " + path_);
  return load_plan_.ColumnBlob(0);
}

Status StateStore::LoadOlderTaskRows(const std::string& job_id, TaskHistoryReplay& replay) {
  StatementReset reset_commits(load_commits_);
  load_commits_.BindText(1, job_id);
  while (true) {
    Result<bool> row = load_commits_.Step();
    if (!row.ok()) return row.status().WithContext("load commits of job " + job_id);
    if (!*row) break;
    TaskCommit c;
    c.job_id = job_id;
    c.task_id = FromSql(load_commits_.ColumnInt64(0));
    c.attempt = static_cast<uint32_t>(load_commits_.ColumnInt64(1));
    Result<std::vector<std::string>> paths = DecodePathList(load_commits_.ColumnText(2));
    if (!paths.ok()) {
      return paths.status().WithContext("commit of job " + job_id + " task " +
                                        std::to_string(c.task_id) + " in " + path_);
    }
    c.output_paths = std::move(paths).value();
    c.rows_in = FromSql(load_commits_.ColumnInt64(3));
    c.rows_out = FromSql(load_commits_.ColumnInt64(4));
    c.device = load_commits_.ColumnText(5);
    c.kernel_ms = load_commits_.ColumnDouble(6);
    c.bytes_processed = FromSql(load_commits_.ColumnInt64(7));
    c.worker_id = load_commits_.ColumnText(8);
    replay.AddOlderCommit(std::move(c));
  }
  StatementReset reset_attempts(load_attempts_);
  load_attempts_.BindText(1, job_id);
  while (true) {
    Result<bool> row = load_attempts_.Step();
    if (!row.ok()) return row.status().WithContext("load attempts of job " + job_id);
    if (!*row) break;
    AttemptRecord a;
    a.job_id = job_id;
    a.task_id = FromSql(load_attempts_.ColumnInt64(0));
    a.attempt = static_cast<uint32_t>(load_attempts_.ColumnInt64(1));
    a.worker_id = load_attempts_.ColumnText(2);
    a.outcome = load_attempts_.ColumnText(3);
    a.error = load_attempts_.ColumnText(4);
    a.ended_ms = load_attempts_.ColumnInt64(5);
    replay.AddOlderAttempt(std::move(a));
  }
  StatementReset reset_sent(load_sent_);
  load_sent_.BindText(1, job_id);
  while (true) {
    Result<bool> row = load_sent_.Step();
    if (!row.ok()) return row.status().WithContext("load sent attempts of job " + job_id);
    if (!*row) break;
    const std::string blob = load_sent_.ColumnBlob(0);
    const std::string worker_id = load_sent_.ColumnText(1);
    const std::string worker_key = load_sent_.ColumnText(2);
    const auto gang_ranks = static_cast<uint32_t>(load_sent_.ColumnInt64(3));
    const bool returned = load_sent_.ColumnInt64(4) != 0;
    size_t at = 0;
    while (at < blob.size()) {
      uint64_t task = 0, attempt = 0;
      if (!GetVarint(blob, at, task) || !GetVarint(blob, at, attempt)) {
        return Internal("damaged sent-attempts row of job " + job_id + " in " + path_);
      }
      replay.AddOlderSent({task, static_cast<uint32_t>(attempt), worker_id, worker_key,
                           gang_ranks, returned});
    }
  }
  return Status::Ok();
}

Status StateStore::ReplayTaskLog(const std::string& job_id, TaskHistoryReplay& replay) {
  if (older_task_tables_) COUPLER_RETURN_IF_ERROR(LoadOlderTaskRows(job_id, replay));
  if (!task_log_table_) return Status::Ok();
  StatementReset reset(load_task_log_);
  load_task_log_.BindText(1, job_id);
  while (true) {
    Result<bool> row = load_task_log_.Step();
    if (!row.ok()) return row.status().WithContext("load the task log of job " + job_id);
    if (!*row) return Status::Ok();
    if (Status s = replay.AddBlob(load_task_log_.ColumnBlobView(0)); !s.ok()) {
      return s.WithContext(path_);
    }
  }
}

Result<TaskHistory> StateStore::LoadTaskHistory(const std::string& job_id) {
  TaskHistoryReplay replay(job_id);
  COUPLER_RETURN_IF_ERROR(ReplayTaskLog(job_id, replay));
  return std::move(replay).Finish();
}

Result<std::vector<TaskCommit>> StateStore::LoadCommits(const std::string& job_id) {
  TaskHistoryReplay replay(job_id, /*whole_commits=*/true);
  COUPLER_RETURN_IF_ERROR(ReplayTaskLog(job_id, replay));
  return std::move(replay).FinishWholeCommits();
}

Result<std::vector<AttemptRecord>> StateStore::LoadAttempts(const std::string& job_id) {
  COUPLER_ASSIGN_OR_RETURN(TaskHistory history, LoadTaskHistory(job_id));
  return std::move(history.attempts);
}

Result<std::vector<SentAttempt>> StateStore::LoadSent(const std::string& job_id) {
  COUPLER_ASSIGN_OR_RETURN(TaskHistory history, LoadTaskHistory(job_id));
  return std::move(history.sent);
}

Result<uint64_t> StateStore::NextJobNumber() {
  StatementReset reset(next_job_number_);
  Result<bool> row = next_job_number_.Step();
  if (!row.ok()) return row.status().WithContext("next job number from " + path_);
  COUPLER_CHECK(*row) << "an aggregate query always returns a row";
  return FromSql(next_job_number_.ColumnInt64(0));
}

}  // namespace coupler::store
