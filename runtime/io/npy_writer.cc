#include "runtime/io/npy_writer.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "runtime/io/atomic_file.h"
#include "runtime/io/npy_header.h"
#include "runtime/io/record_transpose.h"
#include "runtime/io/unique_fd.h"

namespace coupler::io {
namespace {

constexpr size_t kChunkBytes = 1u << 20;

Status WriteRecords(int fd, const Table& table, const std::string& path) {
  const size_t rows = table.rows();
  if (rows == 0) return Status::Ok();
  if (table.num_columns() == 1) {  // one field: the column is the records
    return WriteFull(fd, table.column(0).data(), table.column(0).size_bytes(), path);
  }
  const size_t record_bytes = table.RowBytes();
  const size_t chunk_rows = std::max<size_t>(1, kChunkBytes / record_bytes);
  std::vector<std::byte> chunk(std::min(chunk_rows, rows) * record_bytes);
  for (size_t row = 0; row < rows; row += chunk_rows) {
    const size_t n = std::min(chunk_rows, rows - row);
    size_t offset = 0;
    for (const Column& column : table.columns()) {
      const size_t item = ElementSize(column.dtype());
      ScatterField(column.data() + row * item, item, n, chunk.data(), record_bytes, offset);
      offset += item;
    }
    COUPLER_RETURN_IF_ERROR(WriteFull(fd, chunk.data(), n * record_bytes, path));
  }
  return Status::Ok();
}

}  // namespace

Status WriteNpyAtomic(std::string_view path, const Table& table) {
  const std::string final_path(path);
  auto header = EncodeNpyHeader(table);
  if (!header.ok()) return header.status().WithContext("write " + final_path);
  COUPLER_RETURN_IF_ERROR(CreateParentDirectories(final_path));

  const std::string temp = TempPathFor(final_path);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (!fd.valid()) return ErrnoStatus("create", temp, errno);
  Status status = WriteFull(fd.get(), header->data(), header->size(), temp);
  if (status.ok()) status = WriteRecords(fd.get(), table, temp);
  if (status.ok()) status = fd.Close(temp);
  if (!status.ok()) {
    fd.Reset();
    RemoveQuietly(temp);
    return status;
  }
  return RenameOver(temp, final_path);
}

Status WriteFloatArrayNpyAtomic(const std::string& path, std::span<const float> values) {
  const std::string header = EncodeArrayNpyHeader(ElementType::kFloat32, values.size());
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span(header)),
                                              std::as_bytes(values)};
  return WriteFileAtomic(path, parts, /*durable=*/false);
}

uint64_t NpyFileSize(const Table& table) {
  auto header = EncodeNpyHeader(table);
  return header.ok() ? header->size() + table.DataBytes() : 0;
}

}  // namespace coupler::io
