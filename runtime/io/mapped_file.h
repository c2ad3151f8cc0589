// MappedFile: a read-only mmap of a whole file, unmapped on destruction. Lets a task that needs
// one byte range of a large file (import_csv) touch only the pages of that range.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>

#include "runtime/status.h"

namespace coupler::io {

class MappedFile {
 public:
  // An empty file maps to an empty view. NotFound when the file does not exist.
  static Result<MappedFile> Open(std::string_view path);

  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::string_view text() const { return {static_cast<const char*>(data_), size_}; }
  size_t size() const { return size_; }

  // Tells the kernel [offset, offset + length) will be read once, front to back.
  void AdviseSequential(size_t offset, size_t length) const;

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}
  void Unmap() noexcept;

  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace coupler::io
