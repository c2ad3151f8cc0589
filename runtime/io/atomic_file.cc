#include "runtime/io/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>
#include <system_error>

#include "runtime/io/unique_fd.h"

namespace coupler::io {

std::string TempPathFor(std::string_view path, bool keep_extension) {
  // Seeded per thread from the OS so concurrent tasks and forked workers never collide; the pid
  // in the name also tells an operator which process left a stray temp file behind.
  thread_local std::mt19937_64 rng{(static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                   std::random_device{}()};
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), ".tmp.%ld.%016llx", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(rng()));
  std::string out = std::string(path) + suffix;
  if (keep_extension) out += std::filesystem::path(path).extension().string();
  return out;
}

Status CreateParentDirectories(std::string_view path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) return ErrnoStatus("create directory", parent.string(), ec.value());
  return Status::Ok();
}

Status RenameOver(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    const int error = errno;
    RemoveQuietly(from);
    return ErrnoStatus("rename " + from + " to", to, error);
  }
  return Status::Ok();
}

void RemoveQuietly(const std::string& path) noexcept { ::unlink(path.c_str()); }

}  // namespace coupler::io
