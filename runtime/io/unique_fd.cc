#include "runtime/io/unique_fd.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace coupler::io {

void UniqueFd::Reset() noexcept {
  // Linux frees the descriptor even when close() fails, so retrying on EINTR would be wrong.
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Status UniqueFd::Close(std::string_view path) {
  if (fd_ < 0) return Status::Ok();
  const int rc = ::close(std::exchange(fd_, -1));
  if (rc != 0 && errno != EINTR) return ErrnoStatus("close", path, errno);
  return Status::Ok();
}

Status ErrnoStatus(std::string_view what, std::string_view path, int error) {
  std::string message = std::string(what) + " " + std::string(path) + ": " + std::strerror(error);
  switch (error) {
    case ENOENT: return NotFound(std::move(message));
    case EACCES:
    case EPERM:
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG:
    case ELOOP: return InvalidArgument(std::move(message));
    default: return Internal(std::move(message));
  }
}

Status PreadFull(int fd, void* buffer, size_t size, off_t offset, std::string_view path) {
  auto* out = static_cast<char*>(buffer);
  while (size > 0) {
    const ssize_t n = ::pread(fd, out, size, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("read", path, errno);
    }
    if (n == 0) {
      return InvalidArgument(std::string(path) + ": file ended early (changed while reading?)");
    }
    out += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return Status::Ok();
}

Status WriteFull(int fd, const void* data, size_t size, std::string_view path) {
  const auto* in = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, in, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("write", path, errno);
    }
    in += n;
    size -= static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace coupler::io
