#include "runtime/io/beneath.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace coupler::io {
namespace {

std::vector<std::string_view> Components(std::string_view rel) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= rel.size()) {
    const size_t slash = rel.find('/', start);
    const size_t end = slash == std::string_view::npos ? rel.size() : slash;
    out.push_back(rel.substr(start, end - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

Status Refused(std::string_view rel, int error) {
  if (error == ELOOP) {
    return InvalidArgument("refusing " + std::string(rel) + ": it goes through a symlink");
  }
  if (error == EXDEV) {
    return InvalidArgument("refusing " + std::string(rel) + ": it leads out of its folder");
  }
  return ErrnoStatus("open", rel, error);
}

// The walk openat2 does, by hand: each directory opened with O_NOFOLLOW (a symlink is ELOOP).
Result<UniqueFd> Walk(int dir_fd, std::string_view rel, int flags, mode_t mode) {
  const std::vector<std::string_view> parts = Components(rel);
  UniqueFd owned;
  int at = dir_fd;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string name(parts[i]);
    UniqueFd next(::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) return Refused(rel, errno);
    owned = std::move(next);
    at = owned.get();
  }
  const std::string last(parts.back());
  UniqueFd fd(::openat(at, last.c_str(), flags, mode));
  if (!fd.valid()) return Refused(rel, errno);
  return fd;
}

}  // namespace

bool IsPlainRelativePath(std::string_view rel) {
  if (rel.empty() || rel.front() == '/') return false;
  for (std::string_view part : Components(rel)) {
    if (part.empty() || part == "." || part == "..") return false;
  }
  return true;
}

Result<UniqueFd> OpenBeneath(int dir_fd, std::string_view rel, int flags, mode_t mode) {
  if (!IsPlainRelativePath(rel)) {
    return InvalidArgument("refusing '" + std::string(rel) +
                           "': not a plain relative path (empty, absolute, or with '..')");
  }
  flags |= O_CLOEXEC | O_NOFOLLOW;
  if ((flags & O_CREAT) == 0) mode = 0;  // openat2 refuses a mode without O_CREAT
  open_how how{};
  how.flags = static_cast<uint64_t>(flags);
  how.mode = mode;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const std::string path(rel);
  for (;;) {
    const long fd = ::syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof(how));
    if (fd >= 0) return UniqueFd(static_cast<int>(fd));
    if (errno == EINTR || errno == EAGAIN) continue;  // EAGAIN: a rename raced the lookup
    // No openat2 here (an older kernel, or a sandbox that filters it): walk instead.
    if (errno == ENOSYS || errno == EPERM) return Walk(dir_fd, rel, flags, mode);
    return Refused(rel, errno);
  }
}

Result<UniqueFd> OpenDirectory(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open folder", path, errno);
  return fd;
}

Result<UniqueFd> MakeDirectoriesBeneath(int dir_fd, std::string_view rel) {
  if (!IsPlainRelativePath(rel)) {
    return InvalidArgument("refusing folder '" + std::string(rel) + "': not a plain relative path");
  }
  UniqueFd owned;
  int at = dir_fd;
  for (std::string_view part : Components(rel)) {
    const std::string name(part);
    if (::mkdirat(at, name.c_str(), 0777) != 0 && errno != EEXIST) {
      return ErrnoStatus("mkdir", rel, errno);
    }
    COUPLER_ASSIGN_OR_RETURN(UniqueFd next, OpenBeneath(at, name, O_RDONLY | O_DIRECTORY));
    owned = std::move(next);
    at = owned.get();
  }
  return owned;
}

}  // namespace coupler::io
