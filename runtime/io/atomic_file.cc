#include "runtime/io/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>
#include <system_error>

#include "runtime/io/output_layout.h"
#include "runtime/io/unique_fd.h"

namespace coupler::io {

std::string TempPathFor(std::string_view path, bool keep_extension) {
  // Seeded per thread from the OS so concurrent tasks and forked workers never collide; the pid
  // in the name also tells an operator which process left a stray temp file behind.
  thread_local std::mt19937_64 rng{(static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                   std::random_device{}()};
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), "%ld.%016llx", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(rng()));
  std::string out = std::string(path);
  out += kTempInfix;  // what IsTempFileName recognizes
  out += suffix;
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

Status WriteFileAtomic(const std::string& path, std::span<const std::span<const std::byte>> parts,
                       bool durable) {
  COUPLER_RETURN_IF_ERROR(CreateParentDirectories(path));
  const std::string temp = TempPathFor(path);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (!fd.valid()) return ErrnoStatus("create", temp, errno);
  Status status;
  for (const auto& part : parts) {
    if (status.ok()) status = WriteFull(fd.get(), part.data(), part.size(), temp);
  }
  if (status.ok() && durable && ::fsync(fd.get()) != 0) status = ErrnoStatus("fsync", temp, errno);
  if (status.ok()) status = fd.Close(temp);
  if (!status.ok()) {
    fd.Reset();
    RemoveQuietly(temp);
    return status;
  }
  COUPLER_RETURN_IF_ERROR(RenameOver(temp, path));
  if (durable) {
    // The rename is durable only once the directory entry is on disk too.
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (dir.empty()) dir = std::filesystem::path(".");
    UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd.valid()) ::fsync(dir_fd.get());
  }
  return Status::Ok();
}

void RemoveQuietly(const std::string& path) noexcept { ::unlink(path.c_str()); }

}  // namespace coupler::io
