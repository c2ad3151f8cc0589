// StateStore as a coordinator relies on it: what it wrote is there after a restart, the first
// committed attempt wins, unflushed rows are not, and broken state dirs give a clear Status.
#include "coordinator/store/state_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/store/path_list.h"
#include "tests/unit/store_test_util.h"

extern char** environ;

namespace coupler::store {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using namespace coupler::store::testing;

// ---- A second process that reads while this one writes ----
// The child is this test binary started again (a fresh exec, not a bare fork: SQLite's
// per-process lock bookkeeping must not be inherited), told by an environment variable to run
// RunReaderChild before gtest's main and exit with one of these codes.
constexpr const char* kReaderEnv = "COUPLER_STORE_TEST_READER_DIR";
constexpr uint64_t kReaderBatch = 500;
constexpr uint64_t kReaderBatches = 40;
enum ReaderExit {
  kReaderOk = 0,
  kReaderOpenFailed = 10,
  kReaderLoadFailed = 11,
  kReaderSawTornFlush = 12,   // a flush must appear all at once
  kReaderSawRowsVanish = 13,  // what was visible stays visible
  kReaderTimedOut = 14,
};

int RunReaderChild(const std::string& dir) {
  auto store = StateStore::Open(dir, OpenMode::kReadOnly);
  if (!store.ok()) {
    std::fprintf(stderr, "reader: %s\n", store.status().ToString().c_str());
    return kReaderOpenFailed;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  size_t last = 0;
  int reads = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    auto commits = (*store)->LoadCommits("j-000001");
    if (!commits.ok()) {
      std::fprintf(stderr, "reader: %s\n", commits.status().ToString().c_str());
      return kReaderLoadFailed;
    }
    const size_t n = commits->size();
    if (n % kReaderBatch != 0) return kReaderSawTornFlush;
    if (n < last) return kReaderSawRowsVanish;
    if (reads++ == 0) std::ofstream(fs::path(dir) / "reader-ready") << "ready";
    last = n;
    if (n == kReaderBatch * kReaderBatches) {
      std::fprintf(stderr, "reader: %d consistent reads\n", reads);
      return kReaderOk;
    }
  }
  return kReaderTimedOut;
}

[[maybe_unused]] const bool kIsReaderChild = [] {
  if (const char* dir = std::getenv(kReaderEnv)) std::_Exit(RunReaderChild(dir));
  return false;
}();

// Owns a child process: killed and reaped on every exit path, so a failing test never leaves it.
class ChildProcess {
 public:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

  // The exit code (128 + signal if killed), or nullopt if still running at the deadline.
  std::optional<int> Wait(std::chrono::seconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }

 private:
  pid_t pid_;
};

ChildProcess SpawnReader(const std::string& dir) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(std::string(kReaderEnv) + "=" + dir);
  std::vector<char*> env;
  for (std::string& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  char* argv[] = {self.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, env.data());
  COUPLER_CHECK(rc == 0) << "posix_spawn " << self << ": " << std::strerror(rc);
  return ChildProcess(pid);
}

bool WaitForFile(const fs::path& path, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(StateStoreTest, RoundTripsJobsCommitsAndAttempts) {
  TempDir dir;
  auto store = OpenOrDie(dir.str());
  EXPECT_EQ(store->path(), (dir.path() / "coupler.db").string());
  const JobRecord job = MakeJob("j-000001");
  ASSERT_TRUE(store->PutJob(job).ok());

  TaskCommit odd = MakeCommit(job.id, 7, 2);
  odd.output_paths = {"a b/new\nline.bin", "c\\d", ""};
  odd.task_id = 1ull << 62;
  odd.bytes_processed = ~0ull - 1;  // the full unsigned range survives SQLite's signed integers
  TaskCommit none = MakeCommit(job.id, 3, 1);
  none.output_paths.clear();
  store->AddCommit(odd);
  store->AddCommit(none);
  store->AddAttempt(MakeAttempt(job.id, 3, 0, "lost"));
  store->AddAttempt(MakeAttempt(job.id, 3, 1, "ok"));
  EXPECT_EQ(store->pending(), 4u);
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->pending(), 0u);

  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0], job);

  auto commits = store->LoadCommits(job.id);
  ASSERT_TRUE(commits.ok()) << commits.status().ToString();
  EXPECT_EQ(*commits, (std::vector<TaskCommit>{none, odd}));  // by task id

  auto attempts = store->LoadAttempts(job.id);
  ASSERT_TRUE(attempts.ok()) << attempts.status().ToString();
  EXPECT_EQ(*attempts, (std::vector<AttemptRecord>{MakeAttempt(job.id, 3, 0, "lost"),
                                                    MakeAttempt(job.id, 3, 1, "ok")}));

  auto other = store->LoadCommits("j-000002");
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->empty());

  TaskCommit last = MakeCommit("j-000002", ~0ull, ~0u);
  store->AddCommit(last);
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(*store->LoadCommits("j-000002"), (std::vector<TaskCommit>{last}));
}

TEST(StateStoreTest, FirstCommittedAttemptWins) {
  TempDir dir;
  auto store = OpenOrDie(dir.str());
  store->AddCommit(MakeCommit("j-000001", 1, 0));
  store->AddCommit(MakeCommit("j-000001", 1, 1));  // same flush: the later one is dropped
  ASSERT_TRUE(store->Flush().ok());
  store->AddCommit(MakeCommit("j-000001", 1, 2));  // a later flush: dropped as well
  store->AddCommit(MakeCommit("j-000002", 1, 2));  // another job's task 1 is its own
  ASSERT_TRUE(store->Flush().ok());

  auto commits = store->LoadCommits("j-000001");
  ASSERT_TRUE(commits.ok());
  EXPECT_EQ(*commits, (std::vector<TaskCommit>{MakeCommit("j-000001", 1, 0)}));
  auto others = store->LoadCommits("j-000002");
  ASSERT_TRUE(others.ok());
  EXPECT_EQ(*others, (std::vector<TaskCommit>{MakeCommit("j-000002", 1, 2)}));
}

// A commit revoked (its output was lost) gives way to the next attempt's, whether the revoke
// and the new commit share a flush or not, and a revoked commit still buffered never lands.
TEST(StateStoreTest, ARevokedCommitGivesWayToTheNextAttemptsCommit) {
  TempDir dir;
  auto store = OpenOrDie(dir.str());
  store->AddCommit(MakeCommit("j-000001", 1, 0));
  store->AddCommit(MakeCommit("j-000001", 2, 0));
  ASSERT_TRUE(store->Flush().ok());
  store->RevokeCommit("j-000001", 1);
  store->AddCommit(MakeCommit("j-000001", 1, 1));  // the same flush
  store->RevokeCommit("j-000001", 2);
  ASSERT_TRUE(store->Flush().ok());
  store->AddCommit(MakeCommit("j-000001", 2, 1));  // a later flush
  store->AddCommit(MakeCommit("j-000001", 3, 0));
  store->RevokeCommit("j-000001", 3);  // still buffered: it goes
  ASSERT_TRUE(store->Flush().ok());

  auto commits = store->LoadCommits("j-000001");
  ASSERT_TRUE(commits.ok());
  EXPECT_EQ(*commits, (std::vector<TaskCommit>{MakeCommit("j-000001", 1, 1),
                                               MakeCommit("j-000001", 2, 1)}));
}

TEST(StateStoreTest, FlushedStateSurvivesARestart) {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.str());
    ASSERT_TRUE(store->PutJob(MakeJob("j-000001")).ok());
    store->AddCommit(MakeCommit("j-000001", 0, 0));
    store->AddAttempt(MakeAttempt("j-000001", 0, 0, "ok"));
    ASSERT_TRUE(store->Flush().ok());
  }
  auto store = OpenOrDie(dir.str());
  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(*jobs, (std::vector<JobRecord>{MakeJob("j-000001")}));
  EXPECT_EQ(store->LoadCommits("j-000001")->size(), 1u);
  EXPECT_EQ(store->LoadAttempts("j-000001")->size(), 1u);
}

// The grouped-commit contract: rows live in memory until a write; a crash (here: destroying the
// store) loses them, and a restarted coordinator re-runs those tasks.
TEST(StateStoreTest, UnflushedRowsAreLostOnRestart) {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.str());
    ASSERT_TRUE(store->PutJob(MakeJob("j-000001")).ok());
    store->AddCommit(MakeCommit("j-000001", 0, 0));
    ASSERT_TRUE(store->Flush().ok());
    store->AddCommit(MakeCommit("j-000001", 1, 0));
    store->AddAttempt(MakeAttempt("j-000001", 1, 0, "ok"));
    EXPECT_EQ(store->pending(), 2u);
    EXPECT_EQ(store->LoadCommits("j-000001")->size(), 1u);  // not visible before a flush either
  }
  auto store = OpenOrDie(dir.str());
  EXPECT_EQ(*store->LoadCommits("j-000001"), (std::vector<TaskCommit>{MakeCommit("j-000001", 0, 0)}));
  EXPECT_TRUE(store->LoadAttempts("j-000001")->empty());
  EXPECT_EQ(store->pending(), 0u);
}

// A job write carries the rows buffered before it, so a job is never on disk as finished while
// the commits that finished it are not.
TEST(StateStoreTest, JobWritesIncludeEverythingBufferedBeforeThem) {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.str());
    ASSERT_TRUE(store->PutJob(MakeJob("j-000001")).ok());
    store->AddCommit(MakeCommit("j-000001", 0, 0));
    ASSERT_TRUE(store->SetJobState("j-000001", "succeeded", "", 1700000002000).ok());
    EXPECT_EQ(store->pending(), 0u);
  }
  auto store = OpenOrDie(dir.str());
  EXPECT_EQ(store->LoadJobs()->at(0).state, "succeeded");
  EXPECT_EQ(store->LoadCommits("j-000001")->size(), 1u);
}

TEST(StateStoreTest, SetJobStateUpdatesOnlyThatJob) {
  TempDir dir;
  auto store = OpenOrDie(dir.str());
  ASSERT_TRUE(store->PutJob(MakeJob("j-000001")).ok());
  ASSERT_TRUE(store->PutJob(MakeJob("j-000002")).ok());
  ASSERT_TRUE(store->SetJobState("j-000002", "failed", "node b: task 4 failed 3 times", 42).ok());

  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0], MakeJob("j-000001"));
  EXPECT_EQ((*jobs)[1].state, "failed");
  EXPECT_EQ((*jobs)[1].error, "node b: task 4 failed 3 times");
  EXPECT_EQ((*jobs)[1].finished_ms, 42);
  EXPECT_EQ((*jobs)[1].spec_text, MakeJob("j-000002").spec_text);  // the rest untouched

  JobRecord replaced = MakeJob("j-000001");
  replaced.priority = 9;
  ASSERT_TRUE(store->PutJob(replaced).ok());  // PutJob replaces a job with the same id
  EXPECT_EQ(store->LoadJobs()->at(0), replaced);
}

TEST(StateStoreTest, SetJobStateOfUnknownJobIsNotFoundAndKeepsBufferedRows) {
  TempDir dir;
  auto store = OpenOrDie(dir.str());
  store->AddCommit(MakeCommit("j-000009", 0, 0));
  Status s = store->SetJobState("j-000009", "running", "", 0);
  EXPECT_EQ(s.code(), StatusCode::kNotFound) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("no job j-000009"));
  // The failed transaction wrote nothing, and the row waits for the next write.
  EXPECT_EQ(store->pending(), 1u);
  EXPECT_TRUE(store->LoadCommits("j-000009")->empty());
  ASSERT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->LoadCommits("j-000009")->size(), 1u);
}

TEST(StateStoreTest, NextJobNumberContinuesAcrossRestarts) {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.str());
    EXPECT_EQ(*store->NextJobNumber(), 1u);
    ASSERT_TRUE(store->PutJob(MakeJob("j-000041")).ok());
    ASSERT_TRUE(store->PutJob(MakeJob("j-000007")).ok());
    ASSERT_TRUE(store->PutJob(MakeJob("imported")).ok());  // no number: does not count
    EXPECT_EQ(*store->NextJobNumber(), 42u);
  }
  auto store = OpenOrDie(dir.str());
  EXPECT_EQ(*store->NextJobNumber(), 42u);
  // Past six digits ids keep their numeric order, not their string order.
  ASSERT_TRUE(store->PutJob(MakeJob("j-1000000")).ok());
  EXPECT_EQ(*store->NextJobNumber(), 1000001u);
  auto jobs = store->LoadJobs();
  ASSERT_TRUE(jobs.ok());
  std::vector<std::string> ids;
  for (const JobRecord& j : *jobs) ids.push_back(j.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"imported", "j-000007", "j-000041", "j-1000000"}));
}

TEST(StateStoreTest, FlushesHundredThousandCommitsInOneTransaction) {
  constexpr uint64_t kCommits = 100000;
  TempDir dir;
  auto store = OpenOrDie(dir.str());
  for (uint64_t t = 0; t < kCommits; ++t) store->AddCommit(MakeCommit("j-000001", t, 0));
  ASSERT_EQ(store->pending(), kCommits);

  const auto start = std::chrono::steady_clock::now();
  Status s = store->Flush();
  const auto flushed = std::chrono::steady_clock::now();
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto commits = store->LoadCommits("j-000001");
  const auto loaded = std::chrono::steady_clock::now();
  // A measurement, not a gate (timing on a loaded CI machine proves nothing).
  using Ms = std::chrono::duration<double, std::milli>;
  std::printf("[ measure  ] Flush of %llu commits: %.1f ms; LoadCommits: %.1f ms\n",
              static_cast<unsigned long long>(kCommits), Ms(flushed - start).count(),
              Ms(loaded - flushed).count());

  ASSERT_TRUE(commits.ok()) << commits.status().ToString();
  ASSERT_EQ(commits->size(), kCommits);
  EXPECT_EQ(commits->front(), MakeCommit("j-000001", 0, 0));
  EXPECT_EQ(commits->back(), MakeCommit("j-000001", kCommits - 1, 0));
  EXPECT_EQ(store->pending(), 0u);
}

TEST(StateStoreTest, ReaderSeesFlushedRowsOnlyWhileWriterIsOpen) {
  TempDir dir;
  auto writer = OpenOrDie(dir.str());
  ASSERT_TRUE(writer->PutJob(MakeJob("j-000001")).ok());
  auto reader = OpenOrDie(dir.str(), OpenMode::kReadOnly);
  writer->AddCommit(MakeCommit("j-000001", 0, 0));
  EXPECT_TRUE(reader->LoadCommits("j-000001")->empty());
  ASSERT_TRUE(writer->Flush().ok());
  EXPECT_EQ(reader->LoadCommits("j-000001")->size(), 1u);

  Status s = reader->PutJob(MakeJob("j-000002"));
  EXPECT_THAT(s.message(), HasSubstr("opened read-only"));
  writer.reset();  // the writer's last close checkpoints and removes the WAL; reading goes on
  EXPECT_EQ(reader->LoadJobs()->size(), 1u);
  auto again = StateStore::Open(dir.str(), OpenMode::kReadOnly);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->LoadCommits("j-000001")->size(), 1u);
}

TEST(StateStoreTest, AnotherProcessReadsWhileTheCoordinatorWrites) {
  TempDir dir;
  auto writer = OpenOrDie(dir.str());
  ASSERT_TRUE(writer->PutJob(MakeJob("j-000001")).ok());
  ChildProcess reader = SpawnReader(dir.str());
  ASSERT_TRUE(WaitForFile(dir.path() / "reader-ready", std::chrono::seconds(60)))
      << "the reader process never read the store";
  for (uint64_t b = 0; b < kReaderBatches; ++b) {
    for (uint64_t i = 0; i < kReaderBatch; ++i) {
      writer->AddCommit(MakeCommit("j-000001", b * kReaderBatch + i, 0));
    }
    Status s = writer->Flush();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  std::optional<int> code = reader.Wait(std::chrono::seconds(90));
  ASSERT_TRUE(code.has_value()) << "the reader process was still running after 90 s";
  EXPECT_EQ(*code, kReaderOk) << "see ReaderExit for what the reader saw";
}

TEST(StateStoreTest, SentAttemptsRoundTripInBatches) {
  TempDir dir;
  {
    auto store = OpenOrDie(dir.str());
    ASSERT_TRUE(store->PutJob(MakeJob("j-000001")).ok());
    store->AddSent({"j-000001", {{0, 0}, {1, 0}, {300, 7}}, "w1", "alice"});
    store->AddSent({"j-000001", {{1ull << 40, 200}}, "w2", ""});
    store->AddSent({"j-000001", {{9, 1}}, "w3", "bob", 4});  // a gang, all 4 ranks on w3
    store->AddSent({"j-000002", {{5, 0}}, "", ""});
    EXPECT_EQ(store->pending(), 4u);
    ASSERT_TRUE(store->Flush().ok());
  }
  auto store = OpenOrDie(dir.str());
  auto sent = store->LoadSent("j-000001");
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  std::vector<SentAttempt> expected = {
      {0, 0, "w1", "alice"}, {1, 0, "w1", "alice"}, {300, 7, "w1", "alice"},
      {1ull << 40, 200, "w2", ""}, {9, 1, "w3", "bob", 4}};
  EXPECT_EQ(*sent, expected);
  EXPECT_EQ(store->LoadSent("j-000002")->size(), 1u);
  EXPECT_TRUE(store->LoadSent("j-000404")->empty());
}

}  // namespace
}  // namespace coupler::store
