// UniqueFd: an owned POSIX file descriptor, closed on destruction; plus the read/write loops
// that survive EINTR and short transfers, which every caller would otherwise re-implement.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/status.h"

namespace coupler::io {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() noexcept;

  // Closes now and reports the error close() gives (a failed delayed write shows up here).
  Status Close(std::string_view path);

 private:
  int fd_ = -1;
};

// "<what> <path>: <strerror(errno)>": NotFound for ENOENT, InvalidArgument for what the user can
// fix (permissions, a file where a directory should be), else Internal (I/O errors, disk full).
Status ErrnoStatus(std::string_view what, std::string_view path, int error);

// Reads exactly `size` bytes at `offset`; a short file is InvalidArgument.
Status PreadFull(int fd, void* buffer, size_t size, off_t offset, std::string_view path);

// Writes all of `data`.
Status WriteFull(int fd, const void* data, size_t size, std::string_view path);

}  // namespace coupler::io
