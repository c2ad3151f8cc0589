#include "worker/task_log.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <utility>

#include "runtime/io/atomic_file.h"
#include "runtime/job/task_logs.h"
#include "runtime/logging.h"

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;

Result<io::UniqueFd> CreateFile(const std::string& path) {
  io::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return io::ErrnoStatus("create", path, errno);
  return fd;
}

Result<std::string> ReadRange(int fd, uint64_t offset, size_t n, const std::string& path) {
  std::string text(n, '\0');
  COUPLER_RETURN_IF_ERROR(io::PreadFull(fd, text.data(), n, static_cast<off_t>(offset), path));
  return text;
}

// The text a trimmed file holds: the drop line, then `body` from its first whole line (a line
// cut in two says nothing useful), never more than `bound` bytes in all.
std::string Trimmed(uint64_t dropped_before, uint64_t total, std::string_view body) {
  if (const size_t nl = body.find('\n'); nl != std::string_view::npos && nl + 1 < body.size()) {
    body.remove_prefix(nl + 1);
  }
  return job::DroppedLine(dropped_before + (total - body.size())) + std::string(body);
}

// Writes `text` to a fresh file beside `path` and renames it over `path`: a reader sees the
// old file or the new one, never a half-trimmed one. Returns the new file's descriptor.
Result<io::UniqueFd> Replace(const std::string& path, std::string_view text) {
  const std::string temp = io::TempPathFor(path);
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd fd, CreateFile(temp));
  if (Status s = io::WriteFull(fd.get(), text.data(), text.size(), temp); !s.ok()) {
    io::RemoveQuietly(temp);
    return s;
  }
  COUPLER_RETURN_IF_ERROR(io::RenameOver(temp, path));
  return fd;
}

}  // namespace

Result<BoundedLog> BoundedLog::Create(std::string path, size_t bound) {
  COUPLER_RETURN_IF_ERROR(io::CreateParentDirectories(path));
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd fd, CreateFile(path));
  return BoundedLog(std::move(path), std::move(fd), std::max(bound, kMinTaskLogBytes));
}

BoundedLog BoundedLog::CreateOnFirstWrite(std::string path, size_t bound) {
  BoundedLog log(std::move(path), io::UniqueFd(), std::max(bound, kMinTaskLogBytes));
  log.pending_ = true;
  return log;
}

Status BoundedLog::Open() {
  pending_ = false;
  COUPLER_RETURN_IF_ERROR(io::CreateParentDirectories(path_));
  COUPLER_ASSIGN_OR_RETURN(fd_, CreateFile(path_));
  return Status::Ok();
}

void BoundedLog::Append(std::string_view data) {
  if (data.empty()) return;
  if (pending_) {
    if (Status s = Open(); !s.ok()) return Disable(s);
  }
  if (!fd_.valid()) return;
  const Status s = size_ + data.size() <= bound_ ? Write(data) : KeepTail(data);
  if (!s.ok()) Disable(s);
}

Status BoundedLog::Write(std::string_view data) {
  COUPLER_RETURN_IF_ERROR(io::WriteFull(fd_.get(), data.data(), data.size(), path_));
  size_ += data.size();
  return Status::Ok();
}

// Rewrites the file to the newest half of (file + data). Each rewrite costs half a bound and
// frees half a bound, so the copying stays proportional to what the command printed.
Status BoundedLog::KeepTail(std::string_view data) {
  const size_t keep = bound_ / 2;
  std::string body;
  if (data.size() >= keep) {
    body.assign(data.substr(data.size() - keep));
  } else {
    const uint64_t start = mark_bytes_;  // the old text after its drop line
    const uint64_t want = std::min<uint64_t>(keep - data.size(), size_ - start);
    COUPLER_ASSIGN_OR_RETURN(body, ReadRange(fd_.get(), size_ - want, want, path_));
    body.append(data);
  }
  const std::string text = Trimmed(dropped_, size_ - mark_bytes_ + data.size(), body);
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd fd, Replace(path_, text));
  fd_ = std::move(fd);
  size_ = text.size();
  const std::optional<job::DroppedMark> mark = job::ParseDroppedLine(text);
  dropped_ = mark->dropped;
  mark_bytes_ = mark->line_bytes;
  return Status::Ok();
}

void BoundedLog::Disable(const Status& why) {
  Logger("worker")->warn("task log {} is no longer written: {}", path_, why.message());
  fd_.Reset();
}

Status TrimLogFile(const std::string& path, size_t bound) {
  bound = std::max(bound, kMinTaskLogBytes);
  io::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return io::ErrnoStatus("open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io::ErrnoStatus("stat", path, errno);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size <= bound) return Status::Ok();
  const size_t keep = bound / 2;
  COUPLER_ASSIGN_OR_RETURN(std::string body, ReadRange(fd.get(), size - keep, keep, path));
  COUPLER_ASSIGN_OR_RETURN(io::UniqueFd replaced, Replace(path, Trimmed(0, size, body)));
  return replaced.Close(path);
}

void TrimLogFilesUnder(const std::string& dir, size_t bound) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    if (Status s = TrimLogFile(it->path().string(), bound); !s.ok()) {
      Logger("worker")->warn("cannot trim {}: {}", it->path().string(), s.message());
    }
  }
}

TaskAttemptLogs TaskAttemptLogs::Open(const wire::TaskSpec& spec, size_t bound) {
  TaskAttemptLogs logs;
  logs.bound_ = bound;
  if (spec.workdir.empty() || spec.node_id.empty()) return logs;
  logs.out_ = BoundedLog::CreateOnFirstWrite(
      job::TaskLogPath(spec.workdir, spec.node_id, spec.task_id, spec.attempt, job::kStdoutStream),
      bound);
  logs.err_ = BoundedLog::CreateOnFirstWrite(
      job::TaskLogPath(spec.workdir, spec.node_id, spec.task_id, spec.attempt, job::kStderrStream),
      bound);
  logs.rank_dir_ = job::TaskRankLogDir(spec.workdir, spec.node_id, spec.task_id, spec.attempt);
  return logs;
}

void TaskAttemptLogs::Note(std::string_view line) {
  std::string text(line);
  text += '\n';
  out_.Append(text);
}

}  // namespace coupler::worker
