// Where a task attempt's printed output lives and how it is read back: the worker writes these
// files (worker/task_log.h), `coupler logs` and the coordinator's HTTP API read them, all
// through this header, so the names cannot drift between writer and readers.
//
// Layout, under the node's folder (runtime/io/output_layout.h, NodeDir):
//   {workdir}/{node}/logs/task-000012.attempt-0.stdout        what the command printed
//   {workdir}/{node}/logs/task-000012.attempt-0.stderr
//   {workdir}/{node}/logs/task-000012.attempt-0.ranks/1/rank.1/stdout   a tight group's rank 1
//                                                         (mpirun --output-filename writes it)
// The task number is the job-wide task id that `coupler status` and task errors show
// ("task 12 (shard 3)"); attempts count from 0 like the coordinator's. Each file is bounded by
// its writer, which keeps the tail and puts a "[... N bytes dropped ...]" line first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.h"

namespace coupler::job {

inline constexpr std::string_view kStdoutStream = "stdout";
inline constexpr std::string_view kStderrStream = "stderr";

// "{workdir}/{node}/logs".
std::string TaskLogDir(std::string_view workdir, std::string_view node);

// "task-000012.attempt-0.stdout" for stream "stdout" (or "stderr").
std::string TaskLogFileName(uint64_t task_id, uint32_t attempt, std::string_view stream);

// TaskLogDir + '/' + TaskLogFileName.
std::string TaskLogPath(std::string_view workdir, std::string_view node, uint64_t task_id,
                        uint32_t attempt, std::string_view stream);

// The folder a tight group's mpirun writes each rank's output under (--output-filename):
// "{logs}/task-000012.attempt-0.ranks".
std::string TaskRankLogDir(std::string_view workdir, std::string_view node, uint64_t task_id,
                           uint32_t attempt);

struct TaskLogFile {
  std::string node;
  uint64_t task_id = 0;
  uint32_t attempt = 0;
  std::string stream;  // "stdout", "stderr", "rank.1/stdout", ...
  std::string path;
  uint64_t bytes = 0;

  friend bool operator==(const TaskLogFile&, const TaskLogFile&) = default;
};

// Every log file of a job's workdir, filtered (empty node: all nodes; nullopt task: all tasks;
// nullopt attempt: each task's latest attempt), sorted by node, task, attempt, stream (stdout
// and stderr before the ranks', ranks by number). `nodes` are the job's node ids: a `node`
// not among them is NotFound naming them. A node without logs yet lists nothing.
Result<std::vector<TaskLogFile>> ListTaskLogs(const std::string& workdir,
                                              const std::vector<std::string>& nodes,
                                              std::string_view node, std::optional<uint64_t> task,
                                              std::optional<uint32_t> attempt);

// The first line of a file its writer trimmed: "[... 12345 bytes dropped ...]\n", counting every
// byte dropped since the attempt began, so a reader can tell where in the whole output the
// kept text starts.
std::string DroppedLine(uint64_t dropped_bytes);
// How many bytes the line at the start of `text` says were dropped, and its length with the
// newline; nullopt when `text` does not start with such a line.
struct DroppedMark {
  uint64_t dropped = 0;
  size_t line_bytes = 0;
};
std::optional<DroppedMark> ParseDroppedLine(std::string_view text);

// The file's last `tail_lines` lines (0: all), never more than `max_bytes` from its end (cut
// at a line start when one is in reach). NotFound when the file is missing.
// Never through a symlink at the file itself.
Result<std::string> ReadLogTail(const std::string& path, size_t tail_lines, size_t max_bytes);
// The same for a reader acting for someone else (the coordinator's HTTP API): `path` is opened
// beneath `workdir` (the job's run directory) without following any symlink on the way, so a
// link the job's commands planted in its logs/ cannot lead the reader out of the run directory.
Result<std::string> ReadLogTailBeneath(const std::string& workdir, const std::string& path,
                                       size_t tail_lines, size_t max_bytes);

// For --follow: what was appended since `offset`, an offset into everything the attempt
// printed (dropped bytes included), so a trim between two reads neither repeats nor loses
// text silently. `skipped` counts the bytes trimmed away before this reader saw them.
struct LogChunk {
  std::string text;
  uint64_t next_offset = 0;
  uint64_t skipped = 0;
};
// The last `lines` lines of `text` (0: all of it), with their final newline.
std::string_view LastLines(std::string_view text, size_t lines);
Result<LogChunk> ReadLogFrom(const std::string& path, uint64_t offset, size_t max_bytes);

}  // namespace coupler::job
