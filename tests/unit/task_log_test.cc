// The task log's blobs (coordinator/store/task_log.h): what a flush writes reads back as the
// per-row tables held it, and a damaged blob is an error, never a crash or a wrong history.
#include "coordinator/store/task_log.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace coupler::store {
namespace {

using ::testing::HasSubstr;

TaskCommit Commit(uint64_t task, uint32_t attempt, std::string worker = "w-1") {
  TaskCommit c;
  c.job_id = "j-000007";
  c.task_id = task;
  c.attempt = attempt;
  c.output_paths = {"out/part-" + std::to_string(task), std::string("odd\0name\n", 9)};
  c.rows_in = 1000 + task;
  c.rows_out = 990 + task;
  c.device = task % 2 == 0 ? "cuda:0" : "cpu";
  c.kernel_ms = 1.25 + static_cast<double>(task);
  c.bytes_processed = uint64_t{1} << 40;
  c.worker_id = std::move(worker);
  return c;
}

TaskHistory Replay(const TaskLogBuffer& buffer) {
  TaskHistoryReplay replay("j-000007");
  for (const auto& job : buffer.jobs()) {
    EXPECT_TRUE(replay.AddBlob(job.blob).ok());
  }
  return std::move(replay).Finish();
}

// The live commits' whole records.
std::vector<TaskCommit> ReplayWhole(const std::vector<std::string>& blobs,
                                    const std::string& job = "j-000007") {
  TaskHistoryReplay replay(job, /*whole_commits=*/true);
  for (const std::string& blob : blobs) EXPECT_TRUE(replay.AddBlob(blob).ok());
  return std::move(replay).FinishWholeCommits();
}

std::vector<std::string> Blobs(const TaskLogBuffer& buffer) {
  std::vector<std::string> out;
  for (const auto& job : buffer.jobs()) out.push_back(job.blob);
  return out;
}

TEST(TaskLogTest, EveryRecordReadsBackAsWritten) {
  TaskLogBuffer log;
  TaskCommit edge = Commit(std::numeric_limits<uint64_t>::max(), UINT32_MAX, "");
  edge.output_paths.clear();
  edge.rows_in = std::numeric_limits<uint64_t>::max();
  edge.kernel_ms = -0.0;
  edge.device = "";
  log.AddCommit(Commit(3, 0));
  log.AddCommit(Commit(4, 1, "w-2"));
  log.AddCommit(edge);
  log.AddAttempt({"j-000007", 4, 0, "w-1", "failed", "exit 3: bad | line", -5});
  log.AddAttempt({"j-000007", 9, 2, "", "withdrawn", "", std::numeric_limits<int64_t>::max()});
  log.AddSent({"j-000007", {{3, 0}, {4, 0}}, "w-1", "alice", 0, false});
  log.AddSent({"j-000007", {{4, 0}}, "w-1", "", 2, true});
  EXPECT_EQ(log.pending(), 7u);
  ASSERT_EQ(log.jobs().size(), 1u);

  const TaskHistory h = Replay(log);
  ASSERT_EQ(h.commits.size(), 3u);
  EXPECT_EQ(h.commits[0], (CommittedTask{3, 0, 0}));
  EXPECT_EQ(h.commits[1], (CommittedTask{4, 1, 1}));
  EXPECT_EQ(h.commits[2].task_id, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(h.device_of(h.commits[0]), "cpu");
  EXPECT_EQ(h.device_of(h.commits[1]), "cuda:0");
  EXPECT_EQ(h.device_of(h.commits[2]), "");
  const std::vector<TaskCommit> whole = ReplayWhole(Blobs(log));
  ASSERT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole[0], Commit(3, 0));
  EXPECT_EQ(whole[1], Commit(4, 1, "w-2"));
  EXPECT_EQ(whole[2], edge);
  EXPECT_TRUE(std::signbit(whole[2].kernel_ms));
  ASSERT_EQ(h.attempts.size(), 2u);
  EXPECT_EQ(h.attempts[0], (AttemptRecord{"j-000007", 4, 0, "w-1", "failed", "exit 3: bad | line", -5}));
  EXPECT_EQ(h.attempts[1].ended_ms, std::numeric_limits<int64_t>::max());
  const std::vector<SentAttempt> sent = {
      {3, 0, "w-1", "alice", 0, false}, {4, 0, "w-1", "alice", 0, false}, {4, 0, "w-1", "", 2, true}};
  EXPECT_EQ(h.sent, sent);
}

// A repeated worker id costs a reference, not its bytes: what makes a busy flush's blob small.
TEST(TaskLogTest, RepeatedStringsAreWrittenOnce) {
  TaskLogBuffer log;
  const std::string worker(200, 'w');
  for (uint64_t t = 0; t < 100; ++t) log.AddSent({"j-1", {{t, 0}}, worker, "alice"});
  ASSERT_EQ(log.jobs().size(), 1u);
  EXPECT_LT(log.jobs()[0].blob.size(), 2000u) << "20,000 bytes if each record carried its worker id";
}

TEST(TaskLogTest, EachJobHasItsOwnBlobAndStringTable) {
  TaskLogBuffer log;
  TaskCommit a = Commit(1, 0, "w-9");
  a.job_id = "j-a";
  TaskCommit b = Commit(1, 0, "w-9");
  b.job_id = "j-b";
  log.AddCommit(a);
  log.AddCommit(b);
  log.AddCommit(a);  // back to the first job
  ASSERT_EQ(log.jobs().size(), 2u);
  EXPECT_EQ(log.jobs()[0].records, 2u);
  const std::vector<TaskCommit> h = ReplayWhole({log.jobs()[1].blob}, "j-b");
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].worker_id, "w-9") << "a table entry is never one of another job's blob";
  log.Clear();
  EXPECT_EQ(log.pending(), 0u);
  EXPECT_TRUE(log.jobs().empty());
}

// What the table's INSERT OR IGNORE and DELETE did, replayed: the first commit wins, a revoke
// removes the commit before it, the next commit after a revoke is the task's.
TEST(TaskLogTest, TheFirstCommitWinsAndARevokeMakesRoomForTheNext) {
  TaskLogBuffer first, second;
  first.AddCommit(Commit(5, 0));
  first.AddCommit(Commit(2, 0));
  first.AddCommit(Commit(5, 1));  // a duplicate: dropped
  first.AddCommit(Commit(8, 0));
  first.Revoke("j-000007", 8);      // its output went missing
  second.AddCommit(Commit(8, 2));  // its next attempt
  second.Revoke("j-000007", 2);
  second.AddCommit(Commit(2, 1));
  const std::vector<TaskCommit> h = ReplayWhole({first.jobs()[0].blob, second.jobs()[0].blob});
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0], Commit(2, 1));
  EXPECT_EQ(h[1], Commit(5, 0));
  EXPECT_EQ(h[2], Commit(8, 2));
  TaskHistoryReplay light("j-000007");
  ASSERT_TRUE(light.AddBlob(first.jobs()[0].blob).ok());
  ASSERT_TRUE(light.AddBlob(second.jobs()[0].blob).ok());
  const TaskHistory l = std::move(light).Finish();
  const std::vector<CommittedTask> want = {{2, 1, 1}, {5, 0, 0}, {8, 2, 1}};  // cpu first seen
  EXPECT_EQ(l.commits, want) << "what a restart reads: the same commits";

  // Without any revoke: out of order and duplicated, the first of each task, by task.
  TaskLogBuffer plain;
  for (uint64_t t : {9, 3, 9, 1, 3}) plain.AddCommit(Commit(t, t == 9 ? 0 : 1));
  const TaskHistory p = Replay(plain);
  ASSERT_EQ(p.commits.size(), 3u);
  EXPECT_EQ(p.commits[0].task_id, 1u);
  EXPECT_EQ(p.commits[1].task_id, 3u);
  EXPECT_EQ(p.commits[2].task_id, 9u);
  EXPECT_EQ(p.commits[2].attempt, 0u);
}

TEST(TaskLogTest, AttemptsComeBackByTaskThenAttemptInWriteOrderForTies) {
  TaskLogBuffer log;
  log.AddAttempt({"j-000007", 7, 1, "w", "lost", "second", 2});
  log.AddAttempt({"j-000007", 2, 0, "w", "failed", "", 1});
  log.AddAttempt({"j-000007", 7, 0, "w", "failed", "", 1});
  log.AddAttempt({"j-000007", 7, 1, "w", "output_lost", "third", 3});
  const TaskHistory h = Replay(log);
  ASSERT_EQ(h.attempts.size(), 4u);
  EXPECT_EQ(h.attempts[0].task_id, 2u);
  EXPECT_EQ(h.attempts[1].attempt, 0u);
  EXPECT_EQ(h.attempts[2].error, "second");
  EXPECT_EQ(h.attempts[3].error, "third");
}

// Every prefix of a valid blob, and a few lies in it, fail with an error naming the job.
TEST(TaskLogTest, ADamagedBlobIsAnErrorNeverAWrongHistory) {
  TaskLogBuffer log;
  log.AddCommit(Commit(3, 0));
  log.AddAttempt({"j-000007", 4, 0, "w-1", "failed", "boom", 5});
  log.AddSent({"j-000007", {{3, 0}}, "w-1", "alice"});
  log.Revoke("j-000007", 3);
  const std::string blob = log.jobs()[0].blob;
  size_t whole = 0;
  for (size_t n = 0; n < blob.size(); ++n) {
    TaskHistoryReplay replay("j-000007");
    const Status s = replay.AddBlob(std::string_view(blob).substr(0, n));
    if (s.ok()) {
      ++whole;  // cut between two records: what was read is whole
      continue;
    }
    EXPECT_EQ(s.code(), StatusCode::kInternal) << n;
    EXPECT_THAT(s.message(), HasSubstr("j-000007"));
  }
  EXPECT_EQ(whole, 4u) << "after the format byte and after each of the first three records";
  std::string other_format = blob;
  other_format[0] = 2;
  TaskHistoryReplay a("j-000007");
  EXPECT_THAT(a.AddBlob(other_format).message(), HasSubstr("format 2"));
  TaskHistoryReplay b("j-000007");
  EXPECT_THAT(b.AddBlob(blob + "\x09").message(), HasSubstr("record kind 9"));
  // A reference to a string the blob never defined.
  std::string bad_ref = std::string(1, 1) + "\x04\x05\x00\x00\x00\x00\x01";
  TaskHistoryReplay c("j-000007");
  EXPECT_FALSE(c.AddBlob(bad_ref).ok());
  TaskHistoryReplay d("j-000007");
  EXPECT_FALSE(d.AddBlob("").ok());
}

}  // namespace
}  // namespace coupler::store
