#include "runtime/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "runtime/io/unique_fd.h"

namespace coupler::io {

Result<MappedFile> MappedFile::Open(std::string_view path) {
  const std::string name(path);
  UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("stat", path, errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(name + ": not a regular file");
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) return MappedFile(nullptr, 0);  // mmap refuses a zero length
  void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (data == MAP_FAILED) return ErrnoStatus("mmap", path, errno);
  return MappedFile(data, size);  // the mapping outlives the descriptor
}

MappedFile::~MappedFile() { Unmap(); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::AdviseSequential(size_t offset, size_t length) const {
  if (data_ == nullptr || offset >= size_) return;
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t start = offset / page * page;  // madvise wants a page-aligned address
  const size_t end = std::min(size_, offset + length);
  // Advice values are not flags: each call gives one. Failures only cost read-ahead.
  ::madvise(static_cast<char*>(data_) + start, end - start, MADV_SEQUENTIAL);
  ::madvise(static_cast<char*>(data_) + start, end - start, MADV_WILLNEED);
}

void MappedFile::Unmap() noexcept {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace coupler::io
