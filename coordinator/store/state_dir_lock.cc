#include "coordinator/store/state_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "runtime/util/utc_time.h"

namespace coupler::store {
namespace {

// "pid 4711 on host-a since 2026-12-06T01:40:00Z"
std::string HolderName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "an unknown host");
  const std::string since = util::Iso8601Utc(static_cast<int64_t>(std::time(nullptr)) * 1000);
  return "pid " + std::to_string(::getpid()) + " on " + host + " since " + since;
}

// What the holder wrote, on one line and bounded: the file is in a directory only the owner
// writes, but a refusal must not print whatever a damaged file holds.
std::string ReadHolder(int fd) {
  char buffer[256];
  const ssize_t n = ::pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "";
  std::string holder(buffer, static_cast<size_t>(n));
  if (const size_t end = holder.find('\n'); end != std::string::npos) holder.resize(end);
  for (char& c : holder) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return holder;
}

}  // namespace

Result<StateDirLock> StateDirLock::Acquire(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / kFileName).string();
  // O_CLOEXEC: a command the coordinator starts must not inherit (and so prolong) the lock.
  io::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) {
    return Unavailable("cannot open the state directory's lock " + path + ": " +
                       std::strerror(errno));
  }
  int rc;
  do {
    rc = ::flock(fd.get(), LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    if (errno != EWOULDBLOCK) {
      return Unavailable("cannot lock " + path + ": " + std::strerror(errno));
    }
    std::string holder = ReadHolder(fd.get());
    if (holder.empty()) holder = "a process that has not written its name yet";
    return Unavailable("state directory " + dir + " is in use by another coordinator (" + holder +
                       ", lock " + path + "): stop it first, or give this one another --state");
  }
  const std::string name = HolderName() + "\n";
  if (::ftruncate(fd.get(), 0) != 0) {
    return Unavailable("cannot write " + path + ": " + std::strerror(errno));
  }
  COUPLER_RETURN_IF_ERROR(io::WriteFull(fd.get(), name.data(), name.size(), path));
  return StateDirLock(std::move(fd), path);
}

}  // namespace coupler::store
