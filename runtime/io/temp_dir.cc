#include "runtime/io/temp_dir.h"

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "runtime/io/unique_fd.h"

namespace coupler::io {

Result<TempDir> TempDir::Create(std::string_view prefix) {
  const char* env = std::getenv("TMPDIR");
  std::string base = env != nullptr && *env != '\0' ? env : "/tmp";
  std::string pattern = base + "/" + std::string(prefix) + "XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) return ErrnoStatus("mkdtemp", pattern, errno);
  return TempDir(std::string(buffer.data()));
}

TempDir::~TempDir() { Remove(); }

TempDir::TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}

TempDir& TempDir::operator=(TempDir&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

std::string TempDir::File(std::string_view name) const { return path_ + "/" + std::string(name); }

void TempDir::Remove() noexcept {
  if (path_.empty()) return;
  std::error_code ec;  // best effort: a leftover temp directory is not worth a crash
  std::filesystem::remove_all(path_, ec);
  path_.clear();
}

}  // namespace coupler::io
