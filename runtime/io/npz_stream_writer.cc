#include "runtime/io/npz_stream_writer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <unordered_map>

#include "runtime/io/atomic_file.h"
#include "runtime/io/dictionary_file.h"
#include "runtime/io/npy_header.h"
#include "runtime/io/npz_file.h"
#include "runtime/io/unique_fd.h"
#include "runtime/io/zip_crc.h"

namespace coupler::io {
namespace {

// An unlinked file beside `path` (so it lives on the shard's filesystem, where copy_file_range
// is cheapest, and vanishes with its descriptor whatever happens).
Result<std::shared_ptr<const int>> AnonymousFileBeside(const std::string& path) {
  COUPLER_RETURN_IF_ERROR(CreateParentDirectories(path));
  std::string name = TempPathFor(path) + ".XXXXXX";
  const int raw = ::mkostemp(name.data(), O_CLOEXEC);
  if (raw < 0) return ErrnoStatus("create a spool file beside", path, errno);
  ::unlink(name.c_str());
  return std::shared_ptr<const int>(new int(raw), [](const int* p) {
    ::close(*p);
    delete p;
  });
}

// Writes all of `data` at `offset` (the descriptor's own offset is not used).
Status PwriteAll(int fd, const void* data, uint64_t size, uint64_t offset, const std::string& path) {
  const auto* bytes = static_cast<const std::byte*>(data);
  uint64_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, bytes + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus("write a spool file for", path, errno);
    done += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

}  // namespace

// One column's values as they arrive: the .npy header's room first (rewritten at the end, when
// the row count is known; a 1-D array's header is one size whatever its length), then the data.
struct NpzStreamWriter::Spool {
  std::string name;
  ElementType dtype = ElementType::kFloat32;
  bool categorical = false;
  std::shared_ptr<const int> fd;
  uint64_t header_bytes = 0;
  uint64_t data_bytes = 0;
  uint32_t data_crc = 0;
  std::unordered_map<std::string, int32_t> codes;
  Column::Dictionary dictionary;
  std::vector<int32_t> recoded;  // a batch's codes in the writer's dictionary
};

NpzStreamWriter::NpzStreamWriter(std::string path) : path_(std::move(path)) {}
NpzStreamWriter::~NpzStreamWriter() = default;
NpzStreamWriter::NpzStreamWriter(NpzStreamWriter&&) noexcept = default;
NpzStreamWriter& NpzStreamWriter::operator=(NpzStreamWriter&&) noexcept = default;

uint64_t NpzStreamWriter::rows() const { return rows_; }

Status NpzStreamWriter::Append(const Table& batch) {
  if (Status valid = batch.Validate(); !valid.ok()) return valid.WithContext("write " + path_);
  if (!started_) {
    if (batch.num_columns() == 0) return InvalidArgument("write " + path_ + ": a shard needs at least one column");
    for (const Column& column : batch.columns()) {
      auto spool = std::make_unique<Spool>();
      spool->name = column.name();
      spool->dtype = column.dtype();
      spool->categorical = column.categorical();
      COUPLER_ASSIGN_OR_RETURN(spool->fd, AnonymousFileBeside(path_));
      spool->header_bytes = EncodeArrayNpyHeader(column.dtype(), 0).size();
      spools_.push_back(std::move(spool));
    }
    started_ = true;
  }
  if (batch.num_columns() != spools_.size()) {
    return InvalidArgument("write " + path_ + ": a batch of " + std::to_string(batch.num_columns()) +
                           " columns after batches of " + std::to_string(spools_.size()));
  }
  for (size_t i = 0; i < spools_.size(); ++i) {
    Spool& spool = *spools_[i];
    const Column& column = batch.column(i);
    if (column.name() != spool.name || column.dtype() != spool.dtype ||
        column.categorical() != spool.categorical) {
      return InvalidArgument("write " + path_ + ": column " + std::to_string(i) + " is '" +
                             column.name() + "' (" + std::string(ElementTypeName(column.dtype())) +
                             (column.categorical() ? ", categorical" : "") + ") after batches with '" +
                             spool.name + "' (" + std::string(ElementTypeName(spool.dtype)) +
                             (spool.categorical ? ", categorical" : "") + ")");
    }
    if (!column.loaded()) {
      return InvalidArgument("write " + path_ + ": column '" + column.name() + "' was not loaded");
    }
    const std::byte* data = column.data();
    uint64_t bytes = column.size_bytes();
    if (spool.categorical) {
      // The batch's codes, rewritten into the writer's dictionary; only strings a row uses
      // enter it (a batch cut from a bigger table carries that table's whole dictionary).
      const std::span<const int32_t> codes = column.values<int32_t>();
      const Column::Dictionary& strings = *column.dictionary();
      constexpr int32_t kUnmapped = -2;
      std::vector<int32_t> mapped(strings.size(), kUnmapped);
      spool.recoded.resize(codes.size());
      for (size_t r = 0; r < codes.size(); ++r) {
        const int32_t code = codes[r];
        if (code < 0) {
          spool.recoded[r] = -1;
          continue;
        }
        int32_t& to = mapped[static_cast<size_t>(code)];
        if (to == kUnmapped) {
          const std::string& text = strings[static_cast<size_t>(code)];
          auto [it, added] = spool.codes.try_emplace(text, static_cast<int32_t>(spool.dictionary.size()));
          if (added) spool.dictionary.push_back(text);
          to = it->second;
        }
        spool.recoded[r] = to;
      }
      data = reinterpret_cast<const std::byte*>(spool.recoded.data());
      bytes = spool.recoded.size() * sizeof(int32_t);
    }
    if (bytes == 0) continue;
    // At the column's own end: a failed write leaves nothing counted.
    COUPLER_RETURN_IF_ERROR(
        PwriteAll(*spool.fd, data, bytes, spool.header_bytes + spool.data_bytes, path_));
    spool.data_crc = ZipCrc(spool.data_crc, data, bytes);
    spool.data_bytes += bytes;
  }
  rows_ += batch.rows();
  return Status::Ok();
}

Status NpzStreamWriter::Finish(uint64_t* bytes_written) {
  if (!started_) return InvalidArgument("write " + path_ + ": no batch said what the columns are");
  Table table;
  for (const auto& owned : spools_) {
    Spool& spool = *owned;
    const std::string header = EncodeArrayNpyHeader(spool.dtype, rows_);
    if (header.size() != spool.header_bytes) {
      return Internal("write " + path_ + ": the .npy header of '" + spool.name + "' changed size");
    }
    COUPLER_RETURN_IF_ERROR(PwriteAll(*spool.fd, header.data(), header.size(), 0, path_));
    auto stored = std::make_shared<StoredColumn>();
    stored->fd = spool.fd;
    stored->path = path_;
    stored->values.offset = 0;
    stored->values.bytes = spool.header_bytes + spool.data_bytes;
    stored->values.crc32 = static_cast<uint32_t>(::crc32_combine64(
        ZipCrc(0, header.data(), header.size()), spool.data_crc, static_cast<z_off64_t>(spool.data_bytes)));
    stored->values_data = spool.header_bytes;
    if (spool.categorical) {
      const std::string json = EncodeDictionary(spool.dictionary);
      const uint64_t at = stored->values.bytes;
      COUPLER_RETURN_IF_ERROR(PwriteAll(*spool.fd, json.data(), json.size(), at, path_));
      stored->dictionary = StoredMember{at, json.size(), ZipCrc(0, json.data(), json.size())};
    }
    COUPLER_RETURN_IF_ERROR(
        table.AddColumn(Column::Stored(spool.name, spool.dtype, rows_, std::move(stored))));
  }
  return WriteNpzAtomic(path_, table, bytes_written);
}

}  // namespace coupler::io
