#include "runtime/io/npy_reader.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "runtime/io/npy_header.h"
#include "runtime/io/record_transpose.h"
#include "runtime/io/unique_fd.h"

namespace coupler::io {
namespace {

// Records are read and transposed this many bytes at a time, so a shard never needs a second
// full-size copy in memory and the chunk stays in cache while its fields are gathered.
constexpr size_t kChunkBytes = 1u << 20;

uint64_t LittleEndian(const unsigned char* bytes, size_t n) {
  uint64_t value = 0;
  for (size_t i = 0; i < n; ++i) value |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  return value;
}

class NpyFileReader {
 public:
  // The .npy at bytes [base, base + size) of the file: the whole file, or an .npz member.
  NpyFileReader(std::string_view path, int fd, uint64_t base, uint64_t size)
      : path_(path), fd_(fd), base_(base), size_(size) {}

  Result<Table> Read() {
    COUPLER_ASSIGN_OR_RETURN(const NpyLayout layout, ReadLayout());
    Table table;
    for (const NpyField& field : layout.fields) {
      COUPLER_RETURN_IF_ERROR(table.AddColumn(Column(field.name, field.dtype, layout.rows)));
    }
    if (layout.fields.size() == 1) {  // the records are the column: read straight into it
      if (layout.rows > 0) {
        COUPLER_RETURN_IF_ERROR(PreadFull(fd_, table.column(0).data(),
                                          table.column(0).size_bytes(),
                                          static_cast<off_t>(base_ + data_offset_), path_));
      }
      return table;
    }
    const size_t chunk_rows = std::max<size_t>(1, kChunkBytes / layout.record_bytes);
    std::vector<std::byte> chunk(std::min<uint64_t>(chunk_rows, layout.rows) *
                                 layout.record_bytes);
    for (uint64_t row = 0; row < layout.rows; row += chunk_rows) {
      const size_t rows = std::min<uint64_t>(chunk_rows, layout.rows - row);
      COUPLER_RETURN_IF_ERROR(
          PreadFull(fd_, chunk.data(), rows * layout.record_bytes,
                    static_cast<off_t>(base_ + data_offset_ + row * layout.record_bytes), path_));
      for (size_t f = 0; f < layout.fields.size(); ++f) {
        const size_t item = ElementSize(layout.fields[f].dtype);
        GatherField(chunk.data(), layout.record_bytes, rows, layout.fields[f].offset, item,
                    table.column(f).data() + row * item);
      }
    }
    return table;
  }

  uint64_t data_offset() const { return base_ + data_offset_; }

  Result<NpyLayout> ReadLayout() {
    unsigned char preamble[kNpyPreambleV2] = {};
    if (size_ < kNpyPreambleV1) {
      return Error("not a .npy file: only " + std::to_string(size_) + " bytes long");
    }
    const size_t head = static_cast<size_t>(std::min<uint64_t>(size_, kNpyPreambleV2));
    COUPLER_RETURN_IF_ERROR(PreadFull(fd_, preamble, head, static_cast<off_t>(base_), path_));
    if (!std::equal(kNpyMagic.begin(), kNpyMagic.end(), preamble,
                    [](char a, unsigned char b) { return static_cast<unsigned char>(a) == b; })) {
      return Error("not a .npy file: bad magic bytes (expected \\x93NUMPY)");
    }
    const unsigned major = preamble[6];
    const unsigned minor = preamble[7];
    if (major < 1 || major > 3 || minor != 0) {
      return Error("unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (supported: 1.0, 2.0, 3.0)");
    }
    const size_t preamble_bytes = major == 1 ? kNpyPreambleV1 : kNpyPreambleV2;
    if (size_ < preamble_bytes) {
      return Error("truncated .npy header: the file is " + std::to_string(size_) + " bytes");
    }
    const uint64_t header_len = LittleEndian(preamble + 8, preamble_bytes - 8);
    if (header_len > kMaxNpyHeaderBytes) {
      return Error("header length " + std::to_string(header_len) + " is larger than the " +
                   std::to_string(kMaxNpyHeaderBytes) + "-byte limit");
    }
    if (preamble_bytes + header_len > size_) {
      return Error("header length " + std::to_string(header_len) +
                   " runs past the end of the file (" + std::to_string(size_) + " bytes)");
    }
    std::string header(header_len, '\0');
    COUPLER_RETURN_IF_ERROR(PreadFull(fd_, header.data(), header.size(),
                                      static_cast<off_t>(base_ + preamble_bytes), path_));
    auto layout = ParseNpyHeader(header);
    if (!layout.ok()) return Error(layout.status().message());
    data_offset_ = preamble_bytes + header_len;

    uint64_t data_bytes = 0;
    const bool overflow = __builtin_mul_overflow(
        layout->rows, static_cast<uint64_t>(layout->record_bytes), &data_bytes);
    const uint64_t actual = size_ - data_offset_;
    const std::string expected = std::to_string(layout->rows) + " rows of " +
                                 std::to_string(layout->record_bytes) + " bytes";
    if (overflow || data_bytes > actual) {
      return Error("truncated data: the header declares " + expected + " but only " +
                   std::to_string(actual) + " data bytes follow");
    }
    if (data_bytes < actual) {
      return Error(std::to_string(actual - data_bytes) + " trailing bytes after the " +
                   expected + " the header declares");
    }
    return std::move(layout).value();
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgument(std::string(path_) + ": " + what);
  }

  std::string_view path_;
  int fd_;
  uint64_t base_ = 0;
  uint64_t size_ = 0;
  uint64_t data_offset_ = 0;
};

}  // namespace

Result<Table> ReadNpy(std::string_view path, uint64_t* file_bytes) {
  const std::string name(path);
  UniqueFd fd(::open(name.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("stat", path, errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(name + ": not a regular file");
  const auto size = static_cast<uint64_t>(st.st_size);
  if (file_bytes != nullptr) *file_bytes = size;
  return NpyFileReader(path, fd.get(), 0, size).Read();
}

Result<NpyLayout> ReadNpyLayoutAt(int fd, uint64_t offset, uint64_t size, std::string_view name,
                                  uint64_t* data_offset) {
  NpyFileReader reader(name, fd, offset, size);
  COUPLER_ASSIGN_OR_RETURN(NpyLayout layout, reader.ReadLayout());
  *data_offset = reader.data_offset();
  return layout;
}

}  // namespace coupler::io
