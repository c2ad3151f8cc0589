// The files a task attempt's output goes to (names: runtime/job/task_logs.h), each kept within
// a byte bound: when an append would pass it, the file is rewritten to its newest half behind a
// "[... N bytes dropped ...]" line, so a command printing without end costs bounded disk and a
// reader always finds the tail. Writing never fails the task: a log that cannot be written
// (a full disk) says so once in the worker's log and stops, and the command runs on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/io/unique_fd.h"
#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::worker {

// Per stream; `coupler worker --task-log-bytes` changes it.
inline constexpr size_t kDefaultTaskLogBytes = size_t{8} << 20;
// Below this the kept half would hold only a few lines.
inline constexpr size_t kMinTaskLogBytes = 4096;

// One bounded log file, created empty (a file left by an earlier run of the same attempt is
// replaced). Move-only.
class BoundedLog {
 public:
  BoundedLog() = default;  // writes nothing
  static Result<BoundedLog> Create(std::string path, size_t bound);
  // Creates the file with the first byte written: an attempt that printed nothing there has
  // no file to list.
  static BoundedLog CreateOnFirstWrite(std::string path, size_t bound);

  void Append(std::string_view data);
  // Creates the file now if it waits for its first write.
  void Materialize() {
    if (pending_) {
      if (Status s = Open(); !s.ok()) Disable(s);
    }
  }
  // Bytes in the file now (never above the bound) and dropped so far.
  uint64_t size() const { return size_; }
  uint64_t dropped() const { return dropped_; }

 private:
  BoundedLog(std::string path, io::UniqueFd fd, size_t bound)
      : path_(std::move(path)), fd_(std::move(fd)), bound_(bound) {}
  Status Write(std::string_view data);
  Status KeepTail(std::string_view data);
  void Disable(const Status& why);
  Status Open();

  std::string path_;
  io::UniqueFd fd_;
  size_t bound_ = 0;
  uint64_t size_ = 0;
  uint64_t dropped_ = 0;
  uint64_t mark_bytes_ = 0;  // the drop line's length; 0 before the first trim
  bool pending_ = false;     // CreateOnFirstWrite, nothing written yet
};

// Trims a file someone else wrote (mpirun's per-rank output) to `bound` the same way, after
// its writer is done with it; a file within the bound is left alone.
Status TrimLogFile(const std::string& path, size_t bound);
// TrimLogFile for every regular file under `dir`, recursively; a missing `dir` is fine.
void TrimLogFilesUnder(const std::string& dir, size_t bound);

// A task attempt's stdout and stderr logs: stdout always for a command (so every command's
// attempt has a log), for an in-process op only when it has something to say (a noop task
// writes none: 100,000 of them would be 100,000 files); stderr once something is printed
// there. Without a workdir in the spec (a task run outside a job,
// as unit tests do) nothing is written.
class TaskAttemptLogs {
 public:
  TaskAttemptLogs() = default;
  static TaskAttemptLogs Open(const wire::TaskSpec& spec, size_t bound);

  // stream 1: stdout, 2: stderr, as RunShellCommand's on_output gives them.
  void Feed(int stream, std::string_view data) { (stream == 2 ? err_ : out_).Append(data); }
  // One line to stdout: what an in-process op did.
  void Note(std::string_view line);
  // Set by RunOpCommand: the attempt ran a command, whose output is its log.
  void MarkCommand() {
    command_ = true;
    out_.Materialize();
  }
  bool ran_command() const { return command_; }

  size_t bound() const { return bound_; }
  // Where a tight group's mpirun writes each rank's output; empty without a workdir.
  const std::string& rank_dir() const { return rank_dir_; }

 private:
  BoundedLog out_;
  BoundedLog err_;
  size_t bound_ = kDefaultTaskLogBytes;
  std::string rank_dir_;
  bool command_ = false;
};

}  // namespace coupler::worker
