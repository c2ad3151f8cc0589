// TempDir: a fresh private directory (mkdtemp) removed with everything in it on destruction.
// For tests and for scratch space a task needs only while it runs.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "runtime/status.h"

namespace coupler::io {

class TempDir {
 public:
  // Under $TMPDIR (or /tmp), named "<prefix>XXXXXX".
  static Result<TempDir> Create(std::string_view prefix = "coupler-");

  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // path() + "/" + name.
  std::string File(std::string_view name) const;

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  void Remove() noexcept;

  std::string path_;
};

}  // namespace coupler::io
