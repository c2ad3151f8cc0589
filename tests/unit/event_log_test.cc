#include "coordinator/event_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rapidjson/document.h>

namespace coupler::coordinator {
namespace {

namespace fs = std::filesystem;

class EventLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/coupler-event-log-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }

  std::string Path() const { return (dir_ / kEventLogFile).string(); }

  static std::vector<std::string> Lines(const fs::path& file) {
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  fs::path dir_;
};

// Each line parsed on its own, as grep and jq read the file.
rapidjson::Document Parse(const std::string& line) {
  rapidjson::Document d;
  d.Parse(line.c_str());
  return d;
}

TEST_F(EventLogTest, EveryLineIsOneJsonObjectWithItsTimeAndFields) {
  const int64_t before_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  {
    EventLog log({Path(), kDefaultEventLogBytes, kEventLogKeep});
    log.JobSubmitted("j-000003", "nightly", "alice", 40);
    log.TaskAssigned({"j-000003", "norm", 12, 0}, "w-2");
    // Quotes, a newline and a backslash in a command's error must not break the line.
    log.TaskFailed({"j-000003", "norm", 12, 0}, "w-2", "exit 1: \"bad\"\nline two \\ end");
    log.TaskRetried({"j-000003", "norm", 12, 1}, "failed", "exit 1");
    log.GangPlaced({"j-000003", "train", 40, 0}, "w-1", {"10.0.0.1", "10.0.0.2"});
    log.WorkerJoined("w-2", "node7", "10.0.0.2", 4, 1);
    log.TaskDone({"j-000003", "norm", 12, 1}, "w-1", {12.5, 7.25, 4096});
    log.JobFinished("j-000003", "succeeded", "");
    ASSERT_TRUE(log.Flush().ok());
    EXPECT_EQ(log.pending_bytes(), 0u);
  }
  const std::vector<std::string> lines = Lines(Path());
  ASSERT_EQ(lines.size(), 8u);
  const std::regex ts(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");
  std::vector<std::string> events;
  for (const std::string& line : lines) {
    rapidjson::Document d = Parse(line);
    ASSERT_FALSE(d.HasParseError()) << line;
    ASSERT_TRUE(d.IsObject()) << line;
    ASSERT_TRUE(d.HasMember("ts") && d["ts"].IsString()) << line;
    EXPECT_TRUE(std::regex_match(d["ts"].GetString(), ts)) << line;
    ASSERT_TRUE(d.HasMember("ms") && d["ms"].IsInt64()) << line;
    EXPECT_GE(d["ms"].GetInt64(), before_ms) << line;
    EXPECT_LT(d["ms"].GetInt64(), before_ms + 3'600'000) << line;
    events.push_back(d["event"].GetString());
  }
  EXPECT_EQ(events, (std::vector<std::string>{"job_submitted", "task_assigned", "task_failed",
                                               "task_retried", "gang_placed", "worker_joined",
                                               "task_done", "job_finished"}));
  rapidjson::Document failed = Parse(lines[2]);
  EXPECT_STREQ(failed["job"].GetString(), "j-000003");
  EXPECT_STREQ(failed["node"].GetString(), "norm");
  EXPECT_EQ(failed["task"].GetUint64(), 12u);
  EXPECT_EQ(failed["attempt"].GetUint(), 0u);
  EXPECT_STREQ(failed["worker"].GetString(), "w-2");
  EXPECT_EQ(std::string(failed["reason"].GetString()), "exit 1: \"bad\"\nline two \\ end");
  rapidjson::Document retried = Parse(lines[3]);
  EXPECT_EQ(retried["attempt"].GetUint(), 1u);
  EXPECT_STREQ(retried["cause"].GetString(), "failed");
  rapidjson::Document gang = Parse(lines[4]);
  ASSERT_TRUE(gang["hosts"].IsArray());
  ASSERT_EQ(gang["hosts"].Size(), 2u);
  EXPECT_STREQ(gang["hosts"][1].GetString(), "10.0.0.2");
  rapidjson::Document joined = Parse(lines[5]);
  EXPECT_EQ(joined["slots"].GetUint(), 4u);
  EXPECT_EQ(joined["gpus"].GetUint(), 1u);
  EXPECT_STREQ(Parse(lines[0])["submitted_by"].GetString(), "alice");
  rapidjson::Document done = Parse(lines[6]);
  EXPECT_EQ(done["wall_ms"].GetDouble(), 12.5);
  EXPECT_EQ(done["kernel_ms"].GetDouble(), 7.25);
  EXPECT_EQ(done["bytes"].GetUint64(), 4096u);
  EXPECT_FALSE(Parse(lines[7]).HasMember("error")) << "a success has no error field";
  struct stat st {};
  ASSERT_EQ(::stat(Path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "the log names jobs and users: owner only";
}

// The two lines each task has skip the JSON writer when their strings need no escaping: what
// they write must be what the writer writes, byte for byte, and a line whose strings need
// escaping (or whose cost is not a number) still goes through the writer.
TEST_F(EventLogTest, TaskLinesWrittenByHandAreWhatTheWriterWrites) {
  {
    EventLog log({Path(), kDefaultEventLogBytes, kEventLogKeep});
    log.TaskAssigned({"j-000003", "norm", 12, 0}, "w-2");
    log.TaskDone({"j-000003", "norm", 12, 1}, "w-1", {12.5, 7.25, 4096});
    log.TaskDone({"j-000003", "norm", 18'446'744'073'709'551'615ull, 4'294'967'295u}, "w-1",
                 {0.0, 1e-7, 0});
    log.TaskDone({"j-000003", "norm", 13, 0}, "w-1", {0.1 + 0.2, 123456789.125, 1});
    log.TaskAssigned({"j-000003", "no\"de", 14, 0}, "w\n2");  // escaped: the writer's path
    log.TaskDone({"j-000003", "norm", 15, 0}, "w-1", {std::nan(""), 1.0, 1});
    ASSERT_TRUE(log.Flush().ok());
  }
  const std::vector<std::string> lines = Lines(Path());
  ASSERT_EQ(lines.size(), 6u);
  for (size_t i = 0; i < 4; ++i) {
    rapidjson::Document d;  // every bit of the doubles back, to write them again
    d.Parse<rapidjson::kParseFullPrecisionFlag>(lines[i].c_str());
    ASSERT_FALSE(d.HasParseError()) << lines[i];
    json::Writer w;
    w.BeginObject();
    w.Field("ts", std::string_view(d["ts"].GetString()));
    w.Field("ms", d["ms"].GetInt64());
    w.Field("event", std::string_view(d["event"].GetString()));
    w.Field("job", std::string_view(d["job"].GetString()));
    w.Field("node", std::string_view(d["node"].GetString()));
    w.Field("task", d["task"].GetUint64());
    w.Field("attempt", static_cast<uint32_t>(d["attempt"].GetUint()));
    w.Field("worker", std::string_view(d["worker"].GetString()));
    if (d.HasMember("wall_ms")) {
      w.Field("wall_ms", d["wall_ms"].GetDouble());
      w.Field("kernel_ms", d["kernel_ms"].GetDouble());
      w.Field("bytes", d["bytes"].GetUint64());
    }
    w.EndObject();
    EXPECT_EQ(lines[i], std::string(w.View()));
  }
  EXPECT_EQ(Parse(lines[2])["task"].GetUint64(), 18'446'744'073'709'551'615ull);
  EXPECT_EQ(Parse(lines[2])["kernel_ms"].GetDouble(), 1e-7);
  rapidjson::Document escaped = Parse(lines[4]);
  ASSERT_FALSE(escaped.HasParseError()) << lines[4];
  EXPECT_STREQ(escaped["node"].GetString(), "no\"de");
  EXPECT_STREQ(escaped["worker"].GetString(), "w\n2");
  EXPECT_NE(lines[5].find(R"("event":"task_done")"), std::string::npos) << lines[5];
}

TEST_F(EventLogTest, NothingReachesTheFileBeforeAFlush) {
  EventLog log({Path(), kDefaultEventLogBytes, kEventLogKeep});
  for (uint64_t t = 0; t < 1000; ++t) log.TaskAssigned({"j-000001", "n", t, 0}, "w-1");
  EXPECT_GT(log.pending_bytes(), 0u);
  EXPECT_TRUE(Lines(Path()).empty()) << "events are written once per flush, not one by one";
  ASSERT_TRUE(log.Flush().ok());
  EXPECT_EQ(Lines(Path()).size(), 1000u);
}

TEST_F(EventLogTest, RotationKeepsEachFileUnderTheBoundAndTheNewestLines) {
  constexpr uint64_t kBound = 4096;
  constexpr uint64_t kEvents = 600;
  {
    EventLog log({Path(), kBound, 3});
    for (uint64_t t = 0; t < kEvents; ++t) {
      log.TaskAssigned({"j-000001", "n", t, 0}, "w-1");
      // Flushes of different sizes: one line, a few, several whole files at once (100..300).
      if ((t % 7 == 0 && (t < 100 || t > 300)) || t == 300) {
        ASSERT_TRUE(log.Flush().ok());
      }
    }
  }
  EXPECT_FALSE(fs::exists(Path() + ".4")) << "only 3 rotated files are kept";
  // Oldest file first: the task numbers must rise by one from the oldest kept line to the
  // last written, with nothing lost between files.
  std::vector<uint64_t> tasks;
  for (const std::string& file : {Path() + ".3", Path() + ".2", Path() + ".1", Path()}) {
    ASSERT_TRUE(fs::exists(file)) << file;
    EXPECT_LE(fs::file_size(file), kBound) << file;
    if (file != Path()) {
      EXPECT_GT(fs::file_size(file), kBound / 2) << file << ": rotated early";
    }
    for (const std::string& line : Lines(file)) {
      rapidjson::Document d = Parse(line);
      ASSERT_FALSE(d.HasParseError()) << file << ": " << line;
      tasks.push_back(d["task"].GetUint64());
    }
  }
  ASSERT_FALSE(tasks.empty());
  EXPECT_EQ(tasks.back(), kEvents - 1) << "the newest line is kept";
  EXPECT_GT(tasks.front(), 0u) << "the oldest lines were rotated away";
  for (size_t i = 1; i < tasks.size(); ++i) {
    ASSERT_EQ(tasks[i], tasks[i - 1] + 1) << "at line " << i;
  }
}

TEST_F(EventLogTest, ALineLongerThanTheBoundGetsAFileOfItsOwn) {
  EventLog log({Path(), 512, 3});
  log.TaskAssigned({"j-000001", "n", 1, 0}, "w-1");
  log.TaskFailed({"j-000001", "n", 1, 0}, "w-1", std::string(2000, 'x'));
  log.TaskAssigned({"j-000001", "n", 2, 0}, "w-1");
  ASSERT_TRUE(log.Flush().ok());
  ASSERT_EQ(Lines(Path() + ".2").size(), 1u);
  ASSERT_EQ(Lines(Path() + ".1").size(), 1u);
  EXPECT_STREQ(Parse(Lines(Path() + ".1")[0])["event"].GetString(), "task_failed");
  ASSERT_EQ(Lines(Path()).size(), 1u);
  EXPECT_EQ(Parse(Lines(Path())[0])["task"].GetUint64(), 2u);
}

TEST_F(EventLogTest, AFullDiskIsReportedCountedAndBounded) {
  // /dev/full: every write fails with ENOSPC, as on a full disk, for root too.
  EventLog log({"/dev/full", kDefaultEventLogBytes, kEventLogKeep});
  log.JobSubmitted("j-000001", "full", "", 1);
  const Status s = log.Flush();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/dev/full"), std::string::npos) << s.message();
  EXPECT_EQ(log.write_failures(), 1u);
  EXPECT_GT(log.pending_bytes(), 0u) << "held for a retry";
  // Far more than is held: memory stays bounded, the overflow is counted, nothing aborts.
  for (uint64_t t = 0; t < 200'000; ++t) log.TaskAssigned({"j-000001", "n", t, 0}, "w-1");
  EXPECT_GT(log.lines_dropped(), 0u);
  EXPECT_LT(log.pending_bytes(), size_t{16} << 20);
}

TEST_F(EventLogTest, AnUnwritableDirectoryFailsTheFlushAndTheLinesFollowOnceItIsWritable) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into a read-only directory anyway";
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  EventLog log({Path(), kDefaultEventLogBytes, kEventLogKeep});
  log.JobSubmitted("j-000001", "ro", "", 1);
  const Status s = log.Flush();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(Path()), std::string::npos) << s.message();
  EXPECT_EQ(log.write_failures(), 1u);
  fs::permissions(dir_, fs::perms::owner_all);
  log.JobFinished("j-000001", "succeeded", "");
  ASSERT_TRUE(log.Flush().ok());
  const std::vector<std::string> lines = Lines(Path());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_STREQ(Parse(lines[0])["event"].GetString(), "job_submitted");
}

TEST_F(EventLogTest, ABoundOfZeroWritesNothing) {
  EventLog log({Path(), 0, kEventLogKeep});
  log.JobSubmitted("j-000001", "off", "", 1);
  EXPECT_EQ(log.pending_bytes(), 0u);
  ASSERT_TRUE(log.Flush().ok());
  EXPECT_FALSE(fs::exists(Path()));
}

}  // namespace
}  // namespace coupler::coordinator
