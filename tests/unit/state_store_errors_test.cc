// StateStore and its path encoding at the edges: text it could not have written, state dirs
// that are missing, foreign, newer or unusable — each a clear Status, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "coordinator/store/path_list.h"
#include "coordinator/store/state_store.h"
#include "tests/unit/store_test_util.h"

namespace coupler::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace coupler::store::testing;

TEST(PathListTest, RoundTripsAnyPathList) {
  const std::vector<std::vector<std::string>> cases = {
      {}, {""}, {"a"}, {"a", "", "b"}, {"new\nline", "back\\slash", "\\n", "trail\\"}};
  std::string encoded;
  for (const auto& paths : cases) {
    EncodePathList(paths, &encoded);
    auto decoded = DecodePathList(encoded);
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, paths);
  }
  EncodePathList({"x/a", "x/b"}, &encoded);
  EXPECT_EQ(encoded, "x/a\nx/b\n");  // readable in the sqlite3 shell
}

TEST(PathListTest, RejectsTextItCouldNotHaveWritten) {
  EXPECT_FALSE(DecodePathList("unterminated").ok());
  EXPECT_FALSE(DecodePathList("bad\\escape\n").ok());
  EXPECT_FALSE(DecodePathList("dangling\\").ok());
}

TEST(StateStoreTest, ReadOnlyOpenOfMissingStateIsNotFound) {
  TempDir dir;
  auto missing = StateStore::Open((dir.path() / "nope").string(), OpenMode::kReadOnly);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  auto empty = StateStore::Open(dir.str(), OpenMode::kReadOnly);
  EXPECT_EQ(empty.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(empty.status().message(), HasSubstr("no coupler state in " + dir.str()));
  EXPECT_FALSE(fs::exists(dir.path() / "coupler.db"));  // a reader creates nothing
}

TEST(StateStoreTest, FileThatIsNotSqliteIsAnError) {
  TempDir dir;
  const fs::path db = dir.path() / "coupler.db";
  const std::string junk(4096, 'x');
  std::ofstream(db) << junk;
  auto store = StateStore::Open(dir.str());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument) << store.status().ToString();
  EXPECT_THAT(store.status().message(), HasSubstr(db.string()));
  EXPECT_THAT(store.status().message(), HasSubstr("file is not a database"));
  std::ifstream in(db);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), junk);  // left untouched
}

// Runs SQL on DIR/coupler.db directly, as another program (or a future coupler) would.
void ExecRaw(const fs::path& db_path, const char* sql) {
  sqlite3* db = nullptr;
  COUPLER_CHECK(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK) << sqlite3_errmsg(db);
  COUPLER_CHECK(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// Turns a fresh state into one of schema 10: the per-row task tables (verbatim from 10) in
// place of the task log. Older versions are made from it by the tests below.
constexpr const char* kAsVersion10 = R"sql(
DROP INDEX task_log_by_job; DROP TABLE task_log;
CREATE TABLE commits (
  job_id TEXT NOT NULL, task_id INTEGER NOT NULL, attempt INTEGER NOT NULL,
  output_paths TEXT NOT NULL, rows_in INTEGER NOT NULL, rows_out INTEGER NOT NULL,
  device TEXT NOT NULL, kernel_ms REAL NOT NULL, bytes_processed INTEGER NOT NULL,
  worker_id TEXT NOT NULL, PRIMARY KEY (job_id, task_id)
) WITHOUT ROWID;
CREATE TABLE attempts (
  seq INTEGER PRIMARY KEY, job_id TEXT NOT NULL, task_id INTEGER NOT NULL,
  attempt INTEGER NOT NULL, worker_id TEXT NOT NULL, outcome TEXT NOT NULL,
  error TEXT NOT NULL, ended_ms INTEGER NOT NULL
);
CREATE INDEX attempts_by_task ON attempts(job_id, task_id, attempt);
CREATE TABLE sent (
  seq INTEGER PRIMARY KEY, job_id TEXT NOT NULL, tasks BLOB NOT NULL,
  worker_id TEXT NOT NULL DEFAULT '', worker_key TEXT NOT NULL DEFAULT '',
  gang_ranks INTEGER NOT NULL DEFAULT 0, returned INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sent_by_job ON sent(job_id);
PRAGMA user_version = 10;
)sql";

// A fresh state with job j-000001, turned into schema 10.
void MakeVersion10State(const TempDir& dir) {
  {
    auto store = OpenOrDie(dir.str());
    ASSERT_TRUE(store->PutJob(MakeJob("j-000001")).ok());
  }
  ExecRaw(dir.path() / "coupler.db", kAsVersion10);
}

TEST(StateStoreTest, ForeignSqliteDatabaseIsRefusedUntouched) {
  TempDir dir;
  const fs::path db = dir.path() / "coupler.db";
  ExecRaw(db, "CREATE TABLE photos (id INTEGER PRIMARY KEY)");
  auto store = StateStore::Open(dir.str());
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr("not coupler state"));
  EXPECT_FALSE(fs::exists(dir.path() / "coupler.db-wal"));  // not even switched to WAL
}

// A state written at schema version 2 (before submission ids) is migrated in place: its jobs
// stay, with no submission id, and new ones keep theirs.
TEST(StateStoreTest, AVersion2StateGainsSubmissionIds) {
  TempDir dir;
  MakeVersion10State(dir);
  ExecRaw(dir.path() / "coupler.db",
          "DROP INDEX jobs_by_submission; ALTER TABLE jobs DROP COLUMN submission_id; "
          "ALTER TABLE jobs DROP COLUMN plan; "
          "ALTER TABLE jobs DROP COLUMN run_dir; ALTER TABLE sent DROP COLUMN worker_id; "
          "ALTER TABLE sent DROP COLUMN worker_key; ALTER TABLE sent DROP COLUMN gang_ranks; "
          "ALTER TABLE sent DROP COLUMN returned; PRAGMA user_version = 2");
  auto store = OpenOrDie(dir.str());
  JobRecord retried = MakeJob("j-000002");
  retried.submission_id = "nightly-7";
  ASSERT_TRUE(store->PutJob(retried).ok());
  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0], MakeJob("j-000001"));
  EXPECT_EQ((*jobs)[1].submission_id, "nightly-7");
}

// A state written at schema version 6 (before gangs' ranks were recorded) is migrated in place:
// its sent rows record none (a restart abandons such a gang, as then).
TEST(StateStoreTest, AVersion6StateGainsGangRanks) {
  TempDir dir;
  MakeVersion10State(dir);
  ExecRaw(dir.path() / "coupler.db", "INSERT INTO sent (job_id, tasks, worker_id, worker_key) "
                                     "VALUES ('j-000001', x'0000', 'w1', 'alice');"
                                     "ALTER TABLE sent DROP COLUMN gang_ranks; "
                                          "ALTER TABLE sent DROP COLUMN returned; PRAGMA user_version = 6");
  auto store = OpenOrDie(dir.str());
  store->AddSent({"j-000001", {{1, 0}}, "w1", "alice", 2});
  ASSERT_TRUE(store->Flush().ok());
  auto sent = store->LoadSent("j-000001");
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  const std::vector<SentAttempt> expected = {{0, 0, "w1", "alice", 0}, {1, 0, "w1", "alice", 2}};
  EXPECT_EQ(*sent, expected);
}

// A state written at schema version 7 (before hand-backs were recorded) is migrated in place:
// its rows are all sends, and a hand-back written after reads back as one.
TEST(StateStoreTest, AVersion7StateGainsReturnedAttempts) {
  TempDir dir;
  MakeVersion10State(dir);
  ExecRaw(dir.path() / "coupler.db", "INSERT INTO sent (job_id, tasks, worker_id, worker_key) "
                                     "VALUES ('j-000001', x'0000', 'w1', 'alice');"
                                     "ALTER TABLE sent DROP COLUMN returned; PRAGMA user_version = 7");
  auto store = OpenOrDie(dir.str());
  store->AddSent({"j-000001", {{0, 0}}, "w1", "", 0, /*returned=*/true});
  ASSERT_TRUE(store->Flush().ok());
  auto sent = store->LoadSent("j-000001");
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  const std::vector<SentAttempt> expected = {{0, 0, "w1", "alice", 0, false},
                                             {0, 0, "w1", "", 0, true}};
  EXPECT_EQ(*sent, expected);
}

// The pool's counters are written with the rows they count and read back by the next start;
// a value unchanged since it was written is not written again.
TEST(StateStoreTest, CountersAreKeptAcrossAReopenAndOnlyChangesAreWritten) {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.str());
    auto none = store->LoadCounters();
    ASSERT_TRUE(none.ok()) << none.status().ToString();
    EXPECT_TRUE(none->empty());
    store->SetCounters({{"tasks_done", 41}, {"jobs_finished.succeeded", 3}});
    EXPECT_EQ(store->pending(), 2u);
    ASSERT_TRUE(store->Flush().ok());
    EXPECT_EQ(store->pending(), 0u);
    store->SetCounters({{"tasks_done", 41}, {"jobs_finished.succeeded", 4}});
    EXPECT_EQ(store->pending(), 1u) << "only the value that changed";
    store->SetCounters({{"tasks_done", 42}});
    ASSERT_TRUE(store->PutJob(MakeJob("j-000001")).ok()) << "a job's write takes the counters along";
    EXPECT_EQ(store->pending(), 0u);
  }
  auto store = OpenOrDie(dir.str());
  auto counters = store->LoadCounters();
  ASSERT_TRUE(counters.ok()) << counters.status().ToString();
  const std::map<std::string, uint64_t> expected = {{"tasks_done", 42}, {"jobs_finished.succeeded", 4}};
  EXPECT_EQ(*counters, expected);
  store->SetCounters(expected);
  EXPECT_EQ(store->pending(), 0u) << "what was loaded is what is on disk";
}

TEST(StateStoreTest, AVersion8StateGainsCountersStartingAtZero) {
  TempDir dir;
  MakeVersion10State(dir);
  ExecRaw(dir.path() / "coupler.db", "DROP TABLE counters; DROP TABLE bans; PRAGMA user_version = 8");
  auto store = OpenOrDie(dir.str());
  auto counters = store->LoadCounters();
  ASSERT_TRUE(counters.ok()) << counters.status().ToString();
  EXPECT_TRUE(counters->empty());
  store->SetCounters({{"jobs_submitted", 2}});
  ASSERT_TRUE(store->Flush().ok());
  auto again = store->LoadCounters();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->at("jobs_submitted"), 2u);
}

// A version-10 state keeps its per-row task tables: read first, the log after them, never
// written again. A commit in the log for a task the old table had committed counts for nothing;
// a revoke in the log takes the old table's commit back. A reader (which migrates nothing) reads
// the old tables alone.
TEST(StateStoreTest, AVersion10StatesTaskRowsAreReadBeforeItsLog) {
  TempDir dir;
  MakeVersion10State(dir);
  ExecRaw(dir.path() / "coupler.db",
          "INSERT INTO commits VALUES ('j-000001', 0, 0, '', 10, 5, 'cpu', 1.5, 100, 'w1');"
          "INSERT INTO commits VALUES ('j-000001', 1, 2, '', 11, 6, 'cpu', 2.5, 200, 'w2');"
          "INSERT INTO attempts (job_id, task_id, attempt, worker_id, outcome, error, ended_ms) "
          "VALUES ('j-000001', 1, 1, 'w1', 'failed', 'boom', 1700000000001);"
          "INSERT INTO sent (job_id, tasks, worker_id, worker_key) "
          "VALUES ('j-000001', x'00000102', 'w1', 'alice');");
  {
    auto reader = OpenOrDie(dir.str(), OpenMode::kReadOnly);
    auto history = reader->LoadTaskHistory("j-000001");
    ASSERT_TRUE(history.ok()) << history.status().ToString();
    ASSERT_EQ(history->commits.size(), 2u);
    EXPECT_EQ(history->commits[1].attempt, 2u);
    EXPECT_EQ(history->device_of(history->commits[1]), "cpu");
    auto commits = reader->LoadCommits("j-000001");
    ASSERT_TRUE(commits.ok()) << commits.status().ToString();
    ASSERT_EQ(commits->size(), 2u);
    EXPECT_EQ((*commits)[1].worker_id, "w2");
    EXPECT_EQ((*commits)[1].rows_in, 11u);
    ASSERT_EQ(history->attempts.size(), 1u);
    EXPECT_EQ(history->attempts[0].error, "boom");
    ASSERT_EQ(history->sent.size(), 2u);
    EXPECT_EQ(history->sent[1].attempt, 2u);
  }
  auto store = OpenOrDie(dir.str());
  store->AddCommit(MakeCommit("j-000001", 1, 3));  // task 1 has its commit in the old table
  store->RevokeCommit("j-000001", 0);
  store->AddCommit(MakeCommit("j-000001", 2, 0));
  store->AddAttempt({"j-000001", 0, 0, "", "output_lost", "gone", 1700000000002});
  store->AddSent({"j-000001", {{0, 1}}, "w3", "bob"});
  ASSERT_TRUE(store->Flush().ok());
  auto history = store->LoadTaskHistory("j-000001");
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  ASSERT_EQ(history->commits.size(), 2u);
  EXPECT_EQ(history->commits[0].task_id, 1u);
  EXPECT_EQ(history->commits[0].attempt, 2u) << "the old table's commit stays the task's";
  EXPECT_EQ(history->commits[1].task_id, 2u);
  EXPECT_EQ(history->device_of(history->commits[1]), "cuda:0");
  auto commits = store->LoadCommits("j-000001");
  ASSERT_TRUE(commits.ok()) << commits.status().ToString();
  ASSERT_EQ(commits->size(), 2u);
  EXPECT_EQ((*commits)[0].worker_id, "w2");
  EXPECT_EQ((*commits)[1], MakeCommit("j-000001", 2, 0));
  ASSERT_EQ(history->attempts.size(), 2u);
  EXPECT_EQ(history->attempts[0].outcome, "output_lost") << "by task, then attempt";
  EXPECT_EQ(history->attempts[1].outcome, "failed");
  const std::vector<SentAttempt> sent = {{0, 0, "w1", "alice"}, {1, 2, "w1", "alice"}, {0, 1, "w3", "bob"}};
  EXPECT_EQ(history->sent, sent);
}

// A version-9 state (before GPU health) gains the table: no GPU fenced, and a fence written
// after the migration is read back as written.
TEST(StateStoreTest, AVersion9StateGainsGpuHealthWithNoGpuFenced) {
  TempDir dir;
  MakeVersion10State(dir);
  ExecRaw(dir.path() / "coupler.db", "DROP TABLE gpu_health; PRAGMA user_version = 9");
  auto store = OpenOrDie(dir.str());
  auto none = store->LoadGpuHealth();
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
  const GpuHealthRecord fenced{"w-1", 1, "GPU-0a", "XID 79", 1700000000000, 2, 1};
  ASSERT_TRUE(store->PutGpuHealth({fenced}).ok());
  auto again = store->LoadGpuHealth();
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->at(0), fenced);
}

// A state written at schema version 4 (before admitted plans) is migrated in place: its jobs
// have no plan (they are planned again from their spec at a restart), new ones keep theirs.
TEST(StateStoreTest, AVersion4StateGainsAdmittedPlans) {
  TempDir dir;
  MakeVersion10State(dir);
  ExecRaw(dir.path() / "coupler.db",
          "DROP INDEX jobs_by_submission; ALTER TABLE jobs DROP COLUMN plan; "
          "ALTER TABLE jobs DROP COLUMN run_dir; ALTER TABLE sent DROP COLUMN worker_id; "
          "ALTER TABLE sent DROP COLUMN worker_key; ALTER TABLE sent DROP COLUMN gang_ranks; "
          "ALTER TABLE sent DROP COLUMN returned; PRAGMA user_version = 4");
  auto store = OpenOrDie(dir.str());
  JobRecord planned = MakeJob("j-000002");
  planned.plan = std::string("CPLP\x01\x00\x00binary\xff", 14);
  planned.run_dir = "/work/runs/j-000002";
  ASSERT_TRUE(store->PutJob(planned).ok());
  auto old_plan = store->LoadPlan("j-000001");
  ASSERT_TRUE(old_plan.ok()) << old_plan.status().ToString();
  EXPECT_TRUE(old_plan->empty());
  auto loaded = store->LoadJob("j-000002");
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  EXPECT_EQ(**loaded, planned);
  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[1].run_dir, "/work/runs/j-000002");
  EXPECT_TRUE((*jobs)[1].plan.empty()) << "LoadJobs leaves plans to LoadPlan";
  auto none = store->LoadJob("j-000009");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(StateStoreTest, NewerSchemaVersionIsRefused) {
  TempDir dir;
  { OpenOrDie(dir.str()); }
  ExecRaw(dir.path() / "coupler.db", "PRAGMA user_version = 99");
  for (OpenMode mode : {OpenMode::kReadWrite, OpenMode::kReadOnly}) {
    auto store = StateStore::Open(dir.str(), mode);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(store.status().message(), HasSubstr("written by a newer coupler"));
    EXPECT_THAT(store.status().message(), HasSubstr("schema version 99"));
  }
}

TEST(StateStoreTest, UnusableStateDirIsAClearError) {
  TempDir dir;
  const fs::path file = dir.path() / "plain-file";
  std::ofstream(file) << "x";
  auto not_dir = StateStore::Open(file.string());
  EXPECT_EQ(not_dir.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(not_dir.status().message(), HasSubstr("state dir " + file.string() +
                                                    " is not a directory"));
  auto under_file = StateStore::Open((file / "state").string());
  EXPECT_FALSE(under_file.ok());
  EXPECT_THAT(under_file.status().message(), HasSubstr("state dir " + (file / "state").string()));

  if (geteuid() == 0) GTEST_SKIP() << "root writes to read-only directories";
  const fs::path locked = dir.path() / "locked";
  fs::create_directory(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  auto unwritable = StateStore::Open(locked.string());
  fs::permissions(locked, fs::perms::owner_all);
  EXPECT_EQ(unwritable.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(unwritable.status().message(), HasSubstr("state dir " + locked.string() +
                                                       " is not writable"));
}

TEST(StateStoreTest, BansAreKeptAcrossAReopenUntilRemoved) {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.str());
    ASSERT_TRUE(store->PutBan({"w7", "bad DIMM", "ops", 1700000000000}).ok());
    ASSERT_TRUE(store->PutBan({"w3", "flaky NIC", "ops", 1700000001000}).ok());
    ASSERT_TRUE(store->PutBan({"w7", "bad DIMM, ticket 42", "lead", 1700000002000}).ok());
  }
  auto store = OpenOrDie(dir.str());
  auto bans = store->LoadBans();
  ASSERT_TRUE(bans.ok()) << bans.status().ToString();
  const std::vector<BanRecord> expected = {{"w3", "flaky NIC", "ops", 1700000001000},
                                           {"w7", "bad DIMM, ticket 42", "lead", 1700000002000}};
  EXPECT_EQ(*bans, expected);
  ASSERT_TRUE(store->RemoveBan("w3").ok());
  auto left = store->LoadBans();
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].worker_id, "w7");
}

}  // namespace
}  // namespace coupler::store
