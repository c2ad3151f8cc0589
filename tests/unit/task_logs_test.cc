// Task logs: the names the worker writes and the readers find, listing with its filters and
// order, reading a tail, the writer's bound (the tail kept, the drop counted) and a follower
// that reads across the writer's trims without repeating or losing text.
#include "runtime/job/task_logs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/io/temp_dir.h"
#include "tests/unit/schema_defaults.h"
#include "worker/task_log.h"
#include "worker/task_runner.h"

namespace coupler {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void Write(const fs::path& path, std::string_view text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

io::TempDir MakeDir() {
  Result<io::TempDir> dir = io::TempDir::Create();
  EXPECT_TRUE(dir.ok()) << dir.status().message();
  return std::move(*dir);
}

TEST(TaskLogsTest, NamesFilesUnderTheNodesLogsFolder) {
  EXPECT_EQ(job::TaskLogDir("/w/job", "clean"), "/w/job/clean/logs");
  EXPECT_EQ(job::TaskLogPath("/w/job", "clean", 12, 0, job::kStdoutStream),
            "/w/job/clean/logs/task-000012.attempt-0.stdout");
  EXPECT_EQ(job::TaskLogPath("/w/job", "clean", 1234567, 3, job::kStderrStream),
            "/w/job/clean/logs/task-1234567.attempt-3.stderr");
  EXPECT_EQ(job::TaskRankLogDir("/w/job", "fit", 7, 1),
            "/w/job/fit/logs/task-000007.attempt-1.ranks");
}

std::vector<std::string> Streams(const std::vector<job::TaskLogFile>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    out.push_back(f.node + " " + std::to_string(f.task_id) + " " + std::to_string(f.attempt) + " " +
                  f.stream);
  }
  return out;
}

TEST(TaskLogsTest, ListsEachTasksLatestAttemptInOrderWithRanks) {
  io::TempDir dir = MakeDir();
  const std::string w = dir.path();
  for (const auto& [node, task, attempt, stream] :
       std::vector<std::tuple<std::string, uint64_t, uint32_t, std::string>>{
           {"b", 0, 0, "stdout"},
           {"a", 3, 0, "stdout"},
           {"a", 3, 0, "stderr"},
           {"a", 3, 1, "stderr"},
           {"a", 3, 1, "stdout"},
           {"a", 2, 0, "stdout"}}) {
    Write(job::TaskLogPath(w, node, task, attempt, stream), "x");
  }
  const fs::path ranks = job::TaskRankLogDir(w, "a", 2, 0);
  for (const char* rank : {"rank.10", "rank.2", "rank.0"}) {
    Write(ranks / "1" / rank / "stdout", "r");
  }
  Write(ranks / "1" / "rank.2" / "stderr", "e");
  // Not logs: a temporary of a trim under way, a stray file, an unknown stream.
  Write(job::TaskLogPath(w, "a", 2, 0, "stdout") + ".tmp.1.abcd", "t");
  Write(fs::path(job::TaskLogDir(w, "a")) / "notes.txt", "n");
  Write(job::TaskLogPath(w, "a", 2, 0, "stdin"), "n");

  const std::vector<std::string> nodes = {"b", "a", "c"};  // the job's order
  Result<std::vector<job::TaskLogFile>> all =
      job::ListTaskLogs(w, nodes, "", std::nullopt, std::nullopt);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_THAT(Streams(*all), ElementsAre("b 0 0 stdout", "a 2 0 stdout", "a 2 0 rank.0/stdout",
                                         "a 2 0 rank.2/stdout", "a 2 0 rank.2/stderr",
                                         "a 2 0 rank.10/stdout", "a 3 1 stdout", "a 3 1 stderr"));
  EXPECT_EQ(all->front().path, job::TaskLogPath(w, "b", 0, 0, "stdout"));
  EXPECT_EQ(all->front().bytes, 1u);

  auto first = job::ListTaskLogs(w, nodes, "a", 3, 0);
  ASSERT_TRUE(first.ok());
  EXPECT_THAT(Streams(*first), ElementsAre("a 3 0 stdout", "a 3 0 stderr"));
  auto none = job::ListTaskLogs(w, nodes, "c", std::nullopt, std::nullopt);  // no logs yet
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  auto unknown = job::ListTaskLogs(w, nodes, "nope", std::nullopt, std::nullopt);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "the job has no node 'nope'; its nodes: b, a, c");
}

TEST(TaskLogsTest, ReadsTheLastLinesWithinABound) {
  io::TempDir dir = MakeDir();
  const std::string path = dir.path() + "/log";
  Write(path, "one\ntwo\nthree\nfour\n");
  EXPECT_EQ(*job::ReadLogTail(path, 0, 1 << 20), "one\ntwo\nthree\nfour\n");
  EXPECT_EQ(*job::ReadLogTail(path, 2, 1 << 20), "three\nfour\n");
  EXPECT_EQ(*job::ReadLogTail(path, 9, 1 << 20), "one\ntwo\nthree\nfour\n");
  // 8 bytes from the end are "ee\nfour\n": the cut line is left out.
  EXPECT_EQ(*job::ReadLogTail(path, 0, 8), "four\n");
  Write(path, "no newline at the end");
  EXPECT_EQ(*job::ReadLogTail(path, 1, 1 << 20), "no newline at the end");
  Result<std::string> missing = job::ReadLogTail(dir.path() + "/missing", 0, 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(TaskLogsTest, TheWriterKeepsTheTailWithinItsBoundAndAFollowerLosesNothing) {
  io::TempDir dir = MakeDir();
  const std::string path = job::TaskLogPath(dir.path(), "n", 1, 0, "stdout");
  constexpr size_t kBound = 8192;
  Result<worker::BoundedLog> log = worker::BoundedLog::Create(path, kBound);
  ASSERT_TRUE(log.ok()) << log.status().message();
  std::string written;
  std::string followed;
  uint64_t offset = 0;
  for (int i = 0; i < 20000; ++i) {
    const std::string line = "line " + std::to_string(i) + "\n";
    log->Append(line);
    written += line;
    ASSERT_LE(fs::file_size(path), kBound) << "after line " << i;
    if (i % 7 == 0) {  // a follower polling now and then
      Result<job::LogChunk> chunk = job::ReadLogFrom(path, offset, 1 << 20);
      ASSERT_TRUE(chunk.ok()) << chunk.status().message();
      ASSERT_EQ(chunk->skipped, 0u) << "after line " << i;
      followed += chunk->text;
      offset = chunk->next_offset;
    }
  }
  Result<job::LogChunk> last = job::ReadLogFrom(path, offset, 1 << 20);
  ASSERT_TRUE(last.ok());
  followed += last->text;
  EXPECT_EQ(followed, written);

  const std::string kept = ReadAll(path);
  EXPECT_THAT(kept, StartsWith("[... "));
  EXPECT_TRUE(kept.ends_with("line 19999\n"));
  const std::optional<job::DroppedMark> mark = job::ParseDroppedLine(kept);
  ASSERT_TRUE(mark.has_value());
  EXPECT_EQ(mark->dropped + (kept.size() - mark->line_bytes), written.size());
  EXPECT_EQ(written.substr(mark->dropped), kept.substr(mark->line_bytes));
  // The kept text starts at a line.
  EXPECT_THAT(kept.substr(mark->line_bytes), StartsWith("line "));

  // A reader that fell behind is told how much it missed.
  Result<job::LogChunk> late = job::ReadLogFrom(path, 0, 1 << 20);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->skipped, mark->dropped);
  EXPECT_EQ(late->text, kept.substr(mark->line_bytes));
}

TEST(TaskLogsTest, OneHugeWriteKeepsItsOwnTail) {
  io::TempDir dir = MakeDir();
  const std::string path = dir.path() + "/log";
  Result<worker::BoundedLog> log = worker::BoundedLog::Create(path, 4096);
  ASSERT_TRUE(log.ok());
  log->Append("first\n");
  std::string big;
  for (int i = 0; i < 5000; ++i) big += std::to_string(i) + "\n";
  log->Append(big);
  const std::string kept = ReadAll(path);
  EXPECT_LE(kept.size(), 4096u);
  EXPECT_TRUE(kept.ends_with("4999\n"));
  EXPECT_EQ(
      job::ParseDroppedLine(kept)->dropped + kept.size() - job::ParseDroppedLine(kept)->line_bytes,
      6 + big.size());
}

TEST(TaskLogsTest, TrimsAFileAnotherProcessWrote) {
  io::TempDir dir = MakeDir();
  const std::string path = dir.path() + "/ranks/1/rank.1/stdout";
  std::string text;
  for (int i = 0; i < 10000; ++i) text += "rank line " + std::to_string(i) + "\n";
  Write(path, text);
  Write(dir.path() + "/ranks/1/rank.0/stdout", "small\n");
  worker::TrimLogFilesUnder(dir.path() + "/ranks", 4096);
  const std::string kept = ReadAll(path);
  EXPECT_LE(kept.size(), 4096u);
  EXPECT_THAT(kept, StartsWith("[... "));
  EXPECT_TRUE(kept.ends_with("rank line 9999\n"));
  EXPECT_EQ(ReadAll(dir.path() + "/ranks/1/rank.0/stdout"), "small\n");
  EXPECT_TRUE(worker::TrimLogFile(dir.path() + "/absent", 4096).code() == StatusCode::kNotFound);
}

wire::TaskSpec JobTask(const std::string& workdir, std::string op, wire::TaskParams params) {
  wire::TaskSpec spec;
  spec.job_id = "job-1";
  spec.task_id = 5;
  spec.attempt = 2;
  spec.node_id = "step";
  spec.workdir = workdir;
  spec.shard_index = 1;
  spec.shards = 2;
  spec.params = WithSchemaDefaults(op, std::move(params));
  spec.op = std::move(op);
  return spec;
}

TEST(TaskLogsTest, ACommandsOutputGoesToTheAttemptsLogs) {
  io::TempDir dir = MakeDir();
  const wire::TaskSpec spec =
      JobTask(dir.path(), "exec", {{"command", "echo to-stdout; echo oops >&2; exit 3"}});
  const wire::TaskOutcome outcome = worker::RunTask(spec);
  EXPECT_EQ(outcome.error, "exec: command exited with status 3: oops");  // as before
  EXPECT_EQ(ReadAll(job::TaskLogPath(dir.path(), "step", 5, 2, "stdout")), "to-stdout\n");
  EXPECT_EQ(ReadAll(job::TaskLogPath(dir.path(), "step", 5, 2, "stderr")), "oops\n");
}

TEST(TaskLogsTest, ACommandPrintingWithoutEndStaysWithinTheBound) {
  io::TempDir dir = MakeDir();
  const wire::TaskSpec spec = JobTask(dir.path(), "exec", {{"command", "yes"}, {"timeout", 1.0}});
  const wire::TaskOutcome outcome = worker::RunTask(spec, nullptr, {}, nullptr, 65536);
  EXPECT_EQ(outcome.error, "exec: timed out after 1 s");
  const std::string kept = ReadAll(job::TaskLogPath(dir.path(), "step", 5, 2, "stdout"));
  EXPECT_LE(kept.size(), 65536u);
  const std::optional<job::DroppedMark> mark = job::ParseDroppedLine(kept);
  ASSERT_TRUE(mark.has_value()) << "yes printed less than 64 KiB in a second?";
  EXPECT_GT(mark->dropped, 65536u);
  EXPECT_EQ(kept.substr(mark->line_bytes, 4), "y\ny\n");
}

// An in-process op logs one line when it has something to say (it read or wrote, or failed);
// a noop that succeeded leaves no file: 100,000 of them would cost dispatch 100,000 creates.
TEST(TaskLogsTest, AnInProcessOpLeavesOneSummaryLineWhenItDidSomething) {
  io::TempDir dir = MakeDir();
  const wire::TaskSpec spec = JobTask(dir.path(), "noop", {{"sleep_ms", int64_t{0}}});
  const wire::TaskOutcome outcome = worker::RunTask(spec);
  ASSERT_TRUE(outcome.ok) << outcome.error;
  EXPECT_FALSE(fs::exists(job::TaskLogPath(dir.path(), "step", 5, 2, "stdout")));
  EXPECT_FALSE(fs::exists(job::TaskLogPath(dir.path(), "step", 5, 2, "stderr")));

  wire::TaskSpec import = JobTask(dir.path(), "import_csv", {});
  import.input_paths = {dir.path() + "/missing.csv"};
  import.output_path = dir.path() + "/step/part-00001.npy";
  const wire::TaskOutcome failed = worker::RunTask(import);
  ASSERT_FALSE(failed.ok);
  const std::string line = ReadAll(job::TaskLogPath(dir.path(), "step", 5, 2, "stdout"));
  EXPECT_THAT(line, StartsWith("import_csv task 5 (shard 1) attempt 2: rows in 0, rows out 0, device cpu, "));
  EXPECT_THAT(line, HasSubstr("; error: " + failed.error + "\n"));
  EXPECT_FALSE(fs::exists(job::TaskLogPath(dir.path(), "step", 5, 2, "stderr")));  // nothing there
}

}  // namespace
}  // namespace coupler
