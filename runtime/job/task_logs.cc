#include "runtime/job/task_logs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "runtime/io/beneath.h"
#include "runtime/io/output_layout.h"
#include "runtime/io/unique_fd.h"
#include "runtime/util/padded_number.h"

namespace coupler::job {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kTaskPrefix = "task-";
constexpr std::string_view kAttemptInfix = ".attempt-";
constexpr std::string_view kRanksSuffix = "ranks";
constexpr std::string_view kDroppedPrefix = "[... ";
constexpr std::string_view kDroppedSuffix = " bytes dropped ...]\n";

// Reads an unsigned number at the front of `text` and removes it; false if there is none.
template <typename T>
bool TakeNumber(std::string_view& text, T& value) {
  const auto [ptr, err] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (err != std::errc() || ptr == text.data()) return false;
  text.remove_prefix(static_cast<size_t>(ptr - text.data()));
  return true;
}

bool TakePrefix(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}

// "task-000012.attempt-0.<rest>" → (12, 0, rest).
struct ParsedName {
  uint64_t task = 0;
  uint32_t attempt = 0;
  std::string_view rest;
};
std::optional<ParsedName> ParseName(std::string_view name) {
  ParsedName p;
  if (!TakePrefix(name, kTaskPrefix) || !TakeNumber(name, p.task) ||
      !TakePrefix(name, kAttemptInfix) || !TakeNumber(name, p.attempt) || !TakePrefix(name, ".")) {
    return std::nullopt;
  }
  p.rest = name;
  return p;
}

// Where a stream sorts within one attempt: stdout, stderr, then each rank's stdout and stderr
// by rank number (text order would put rank.10 before rank.2).
int StdOrder(std::string_view stream) {
  return stream == kStdoutStream ? 0 : stream == kStderrStream ? 1 : 2;
}
std::tuple<std::string, uint64_t, int, std::string> StreamKey(const std::string& stream) {
  const size_t slash = stream.rfind('/');
  if (slash == std::string::npos) return {"", 0, StdOrder(stream), stream};
  const std::string_view head(stream.data(), slash);
  const std::string_view leaf = std::string_view(stream).substr(slash + 1);
  std::string prefix(head);
  uint64_t rank = 0;
  if (const size_t dot = head.rfind("rank."); dot != std::string_view::npos) {
    prefix = std::string(head.substr(0, dot));
    std::string_view number = head.substr(dot + 5);
    TakeNumber(number, rank);
  }
  // "~" after "": the ranks' files come after the task's own.
  return {"~" + prefix, rank, StdOrder(leaf), std::string(leaf)};
}

uint64_t SizeOf(const fs::directory_entry& e) {
  std::error_code ec;
  const auto size = e.file_size(ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

// The per-rank files mpirun --output-filename wrote under `dir`: {job}/rank.N/{stdout,stderr}.
// Open MPI numbers the launched job 1; a job it spawned later would show as "2/rank.N/...".
void ListRankFiles(const fs::path& dir, TaskLogFile base, std::vector<TaskLogFile>& out) {
  std::error_code ec;
  for (const auto& job_dir : fs::directory_iterator(dir, ec)) {
    if (job_dir.is_symlink(ec) || !job_dir.is_directory(ec)) continue;
    const std::string job = job_dir.path().filename().string();
    for (const auto& rank_dir : fs::directory_iterator(job_dir.path(), ec)) {
      const std::string rank = rank_dir.path().filename().string();
      if (rank_dir.is_symlink(ec) || !rank_dir.is_directory(ec) || !rank.starts_with("rank.")) {
        continue;
      }
      for (const auto& file : fs::directory_iterator(rank_dir.path(), ec)) {
        const std::string stream = file.path().filename().string();
        if (file.is_symlink(ec) || !file.is_regular_file(ec) || io::IsTempFileName(stream)) continue;
        TaskLogFile f = base;
        f.stream = (job == "1" ? "" : job + "/") + rank + "/" + stream;
        f.path = file.path().string();
        f.bytes = SizeOf(file);
        out.push_back(std::move(f));
      }
    }
  }
}

void ListNode(const std::string& workdir, const std::string& node, std::optional<uint64_t> task,
              std::vector<TaskLogFile>& out) {
  std::error_code ec;
  // A job's commands write its folders: a logs/ (or node folder) that is a symlink is not its
  // logs, and nothing below is followed through one.
  if (fs::is_symlink(io::NodeDir(workdir, node), ec) || fs::is_symlink(TaskLogDir(workdir, node), ec)) {
    return;
  }
  for (const auto& e : fs::directory_iterator(TaskLogDir(workdir, node), ec)) {
    const std::string name = e.path().filename().string();
    if (io::IsTempFileName(name) || e.is_symlink(ec)) continue;
    const std::optional<ParsedName> p = ParseName(name);
    if (!p || (task && p->task != *task)) continue;
    TaskLogFile base{node, p->task, p->attempt, "", "", 0};
    if (p->rest == kRanksSuffix && e.is_directory(ec)) {
      ListRankFiles(e.path(), base, out);
    } else if ((p->rest == kStdoutStream || p->rest == kStderrStream) && e.is_regular_file(ec)) {
      base.stream = std::string(p->rest);
      base.path = e.path().string();
      base.bytes = SizeOf(e);
      out.push_back(std::move(base));
    }
  }
}

std::string JoinNodes(const std::vector<std::string>& nodes) {
  std::string text;
  for (const std::string& n : nodes) text += (text.empty() ? "" : ", ") + n;
  return text.empty() ? "(none)" : text;
}

// `beneath` non-empty: `path` is opened beneath that folder, no symlink followed on the way.
Result<io::UniqueFd> OpenForReading(const std::string& path, off_t& size,
                                    const std::string& beneath = "") {
  io::UniqueFd fd;
  if (beneath.empty()) {
    fd = io::UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd.valid()) return io::ErrnoStatus("open", path, errno);
  } else {
    if (!path.starts_with(beneath + "/")) {
      return InvalidArgument("refusing " + path + ": it is not under " + beneath);
    }
    COUPLER_ASSIGN_OR_RETURN(io::UniqueFd dir, io::OpenDirectory(beneath));
    COUPLER_ASSIGN_OR_RETURN(fd, io::OpenBeneath(dir.get(), path.substr(beneath.size() + 1), O_RDONLY));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io::ErrnoStatus("stat", path, errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgument("refusing " + path + ": not a regular file");
  size = st.st_size;
  return fd;
}

// Up to `n` bytes at `offset` (fewer when the file is shorter).
Result<std::string> ReadAt(int fd, off_t offset, size_t n, const std::string& path) {
  std::string text(n, '\0');
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, text.data() + got, n - got, offset + static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return io::ErrnoStatus("read", path, errno);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  text.resize(got);
  return text;
}

}  // namespace

std::string TaskLogDir(std::string_view workdir, std::string_view node) {
  return io::NodeDir(workdir, node) + "/logs";
}

namespace {

// "task-000012.attempt-0.stdout": TaskLogFileName, appended (a worker makes three of these
// paths for every task it runs: no format parsed, one allocation each).
void AppendTaskLogFileName(std::string& out, uint64_t task_id, uint32_t attempt,
                           std::string_view stream) {
  out += "task-";
  if (task_id <= static_cast<uint64_t>(INT64_MAX)) {
    util::AppendZeroPadded(out, static_cast<int64_t>(task_id), 6);
  } else {
    out += std::to_string(task_id);  // past 19 digits: wider than the padding anyway
  }
  out += ".attempt-";
  out += std::to_string(attempt);
  out += '.';
  out += stream;
}

}  // namespace

std::string TaskLogFileName(uint64_t task_id, uint32_t attempt, std::string_view stream) {
  std::string name;
  AppendTaskLogFileName(name, task_id, attempt, stream);
  return name;
}

std::string TaskLogPath(std::string_view workdir, std::string_view node, uint64_t task_id,
                        uint32_t attempt, std::string_view stream) {
  std::string path = TaskLogDir(workdir, node);
  path += '/';
  AppendTaskLogFileName(path, task_id, attempt, stream);
  return path;
}

std::string TaskRankLogDir(std::string_view workdir, std::string_view node, uint64_t task_id,
                           uint32_t attempt) {
  return TaskLogPath(workdir, node, task_id, attempt, kRanksSuffix);
}

std::string DroppedLine(uint64_t dropped_bytes) {
  return std::string(kDroppedPrefix) + std::to_string(dropped_bytes) + std::string(kDroppedSuffix);
}

std::optional<DroppedMark> ParseDroppedLine(std::string_view text) {
  const std::string_view whole = text;
  DroppedMark mark;
  if (!TakePrefix(text, kDroppedPrefix) || !TakeNumber(text, mark.dropped) ||
      !TakePrefix(text, kDroppedSuffix)) {
    return std::nullopt;
  }
  mark.line_bytes = whole.size() - text.size();
  return mark;
}

Result<std::vector<TaskLogFile>> ListTaskLogs(const std::string& workdir,
                                              const std::vector<std::string>& nodes,
                                              std::string_view node, std::optional<uint64_t> task,
                                              std::optional<uint32_t> attempt) {
  if (!node.empty() && std::find(nodes.begin(), nodes.end(), node) == nodes.end()) {
    return NotFound("the job has no node '" + std::string(node) +
                    "'; its nodes: " + JoinNodes(nodes));
  }
  std::vector<TaskLogFile> files;
  for (const std::string& n : nodes) {
    if (node.empty() || n == node) ListNode(workdir, n, task, files);
  }
  // Each task's latest attempt, unless one was asked for.
  std::map<std::pair<std::string, uint64_t>, uint32_t> latest;
  for (const TaskLogFile& f : files) {
    uint32_t& a = latest[{f.node, f.task_id}];
    a = std::max(a, f.attempt);
  }
  std::erase_if(files, [&](const TaskLogFile& f) {
    return attempt ? f.attempt != *attempt : f.attempt != latest[{f.node, f.task_id}];
  });
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < nodes.size(); ++i) order.emplace(nodes[i], i);
  std::sort(files.begin(), files.end(), [&](const TaskLogFile& a, const TaskLogFile& b) {
    return std::tuple(order[a.node], a.task_id, a.attempt, StreamKey(a.stream)) <
           std::tuple(order[b.node], b.task_id, b.attempt, StreamKey(b.stream));
  });
  return files;
}

Result<std::string> ReadLogTail(const std::string& path, size_t tail_lines, size_t max_bytes) {
  return ReadLogTailBeneath("", path, tail_lines, max_bytes);
}

Result<std::string> ReadLogTailBeneath(const std::string& workdir, const std::string& path,
                                       size_t tail_lines, size_t max_bytes) {
  off_t size = 0;
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd fd, OpenForReading(path, size, workdir));
  const size_t want =
      max_bytes == 0 ? static_cast<size_t>(size) : std::min(static_cast<size_t>(size), max_bytes);
  const off_t start = size - static_cast<off_t>(want);
  COUPLER_ASSIGN_OR_RETURN(std::string text, ReadAt(fd.get(), start, want, path));
  std::string_view kept = text;
  // A cut in the middle of a line starts at the next line instead, when there is one.
  if (start > 0) {
    if (const size_t nl = kept.find('\n'); nl != std::string_view::npos && nl + 1 < kept.size()) {
      kept.remove_prefix(nl + 1);
    }
  }
  return std::string(LastLines(kept, tail_lines));
}

std::string_view LastLines(std::string_view text, size_t lines) {
  if (lines == 0) return text;
  // Line k from the end starts after the k-th newline before the text's last newline.
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  size_t begin = 0;
  for (size_t k = 0; k < lines && pos > 0; ++k) {
    const size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string_view::npos) {
      begin = 0;
      break;
    }
    begin = nl + 1;
    pos = nl;
  }
  return text.substr(begin);
}

Result<LogChunk> ReadLogFrom(const std::string& path, uint64_t offset, size_t max_bytes) {
  off_t size = 0;
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd fd, OpenForReading(path, size));
  // The drop line is short: its number has at most 20 digits.
  COUPLER_ASSIGN_OR_RETURN(std::string head, ReadAt(fd.get(), 0, 64, path));
  const std::optional<DroppedMark> mark = ParseDroppedLine(head);
  const uint64_t dropped = mark ? mark->dropped : 0;
  const uint64_t body = mark ? mark->line_bytes : 0;
  const uint64_t end = dropped + static_cast<uint64_t>(size) - body;
  LogChunk chunk;
  // Past the end: the file was started again (a fresh writer); read it from its beginning.
  if (offset > end) offset = 0;
  if (offset < dropped) {
    chunk.skipped = dropped - offset;
    offset = dropped;
  }
  const uint64_t at = body + (offset - dropped);
  const size_t n =
      static_cast<size_t>(std::min<uint64_t>(static_cast<uint64_t>(size) - at, max_bytes));
  COUPLER_ASSIGN_OR_RETURN(chunk.text, ReadAt(fd.get(), static_cast<off_t>(at), n, path));
  chunk.next_offset = offset + chunk.text.size();
  return chunk;
}

}  // namespace coupler::job
