#include "coordinator/store/commit_generation.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "coordinator/store/state_files.h"

namespace coupler::store {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBootIdFile = "/proc/sys/kernel/random/boot_id";
// The first line of the record: marks where it starts and which version of it this is (a reader
// ignores a record of a version it does not know rather than misreading it).
constexpr std::string_view kRecordHeader = "generation-record 1";

std::optional<uint64_t> ParseU64(std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Unavailable(std::strerror(n < 0 ? errno : EIO));
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

std::string CurrentBootId() {
  std::ifstream in(kBootIdFile);
  std::string id;
  std::getline(in, id);
  return id;
}

std::string FormatStateMarker(const std::string& db_path, const CommitGeneration& generation) {
  std::string out = "coupler state: " + db_path + " holds this coordinator's jobs\n";
  out += kRecordHeader;
  out += "\ncommitted " + std::to_string(generation.committed) + "\ndurable " +
         std::to_string(generation.durable) + "\nboot " + generation.boot_id + "\n";
  return out;
}

std::optional<CommitGeneration> ParseStateMarker(std::string_view text) {
  const size_t start = text.find(std::string(kRecordHeader) + "\n");
  if (start == std::string_view::npos) return std::nullopt;
  std::istringstream in(std::string(text.substr(start + kRecordHeader.size() + 1)));
  CommitGeneration g;
  bool committed = false, durable = false, boot = false;
  for (std::string line; std::getline(in, line);) {
    const size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string_view key = std::string_view(line).substr(0, space);
    const std::string_view value = std::string_view(line).substr(space + 1);
    if (key == "committed") {
      const std::optional<uint64_t> v = ParseU64(value);
      if (!v) return std::nullopt;
      g.committed = *v;
      committed = true;
    } else if (key == "durable") {
      const std::optional<uint64_t> v = ParseU64(value);
      if (!v) return std::nullopt;
      g.durable = *v;
      durable = true;
    } else if (key == "boot") {
      g.boot_id = std::string(value);
      boot = true;
    }
  }
  // A record cut short is no record: the check must never rest on half of one.
  if (!committed || !durable || !boot || g.durable > g.committed) return std::nullopt;
  return g;
}

std::optional<CommitGeneration> ReadCommitGeneration(const std::string& dir) {
  std::ifstream in(fs::path(dir) / kStateMarker, std::ios::binary);
  if (!in) return std::nullopt;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseStateMarker(text);
}

Status WriteCommitGeneration(const std::string& dir, const std::string& db_path,
                             const CommitGeneration& generation) {
  const std::string marker = (fs::path(dir) / kStateMarker).string();
  const std::string tmp = marker + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Unavailable("cannot write " + tmp + ": " + std::strerror(errno));
  Status written = WriteAll(fd, FormatStateMarker(db_path, generation));
  if (::close(fd) != 0 && written.ok()) written = Unavailable(std::strerror(errno));
  if (written.ok() && ::rename(tmp.c_str(), marker.c_str()) != 0) {
    written = Unavailable(std::string("rename: ") + std::strerror(errno));
  }
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return Unavailable("cannot write " + marker + ": " + written.message());
  }
  return Status::Ok();
}

Status CheckCommitGeneration(const std::string& dir, const std::string& db_path,
                             const CommitGeneration& recorded, uint64_t found,
                             std::string_view boot_id) {
  // A process crash keeps every write the page cache holds: the database must have every
  // commit. Another boot (a power loss, or the directory moved to another machine) keeps for
  // sure only what a checkpoint synced; later commits may be gone without anyone's fault.
  const bool same_boot = !boot_id.empty() && recorded.boot_id == boot_id;
  const uint64_t required = same_boot ? recorded.committed : recorded.durable;
  if (found >= required) return Status::Ok();
  const std::string marker = (fs::path(dir) / kStateMarker).string();
  return InvalidArgument(
      db_path + " (with " + db_path + "-wal) has lost commits: generation " +
      std::to_string(required) + " recorded in " + marker + ", " + std::to_string(found) +
      " found (" + std::to_string(required - found) +
      " commits gone: its WAL was deleted, or an older copy of the database was put back), and "
      "starting would forget jobs and finished tasks. Restore the state directory from a "
      "backup, or start with " + kAcceptStateLossFlag + " to continue with what it holds");
}

}  // namespace coupler::store
