#include "runtime/io/npz_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/io/atomic_file.h"
#include "runtime/io/dictionary_file.h"
#include "runtime/io/npy_header.h"
#include "runtime/io/npy_reader.h"
#include "runtime/io/unique_fd.h"
#include "runtime/io/zip_crc.h"

namespace coupler::io {
namespace {

constexpr uint32_t kLocalSignature = 0x04034b50;
constexpr uint32_t kCentralSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint16_t kZip64ExtraId = 0x0001;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kUtf8Flag = 0x0800;
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // 1980-01-01: files carry no time
constexpr size_t kLocalHeaderBytes = 30;
constexpr size_t kCentralHeaderBytes = 46;
constexpr size_t kEndBytes = 22;
constexpr size_t kZip64EndBytes = 56;
constexpr size_t kZip64LocatorBytes = 20;
// A central directory bigger than this is not a shard's (a hostile size must not allocate).
constexpr uint64_t kMaxDirectoryBytes = 64u << 20;
constexpr std::string_view kColumnSuffix = ".npy";
constexpr std::string_view kDictionarySuffix = ".dictionary.json";
// The longest dictionary member read into memory: a categorical column's strings.
constexpr uint64_t kMaxDictionaryBytes = 4ull << 30;

void Put16(std::string& out, uint16_t v) {
  out += static_cast<char>(v & 0xFF);
  out += static_cast<char>(v >> 8);
}
void Put32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
void Put64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint64_t Get(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

bool Ascii(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// ---- writing ----

struct Entry {
  std::string name;
  uint32_t crc = 0;
  uint64_t bytes = 0;
  uint64_t offset = 0;  // of the local header
};

class NpzWriter {
 public:
  NpzWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  // A member whose bytes are given (header, then data), checksummed here.
  Status Add(std::string name, std::string_view head, const std::byte* data, uint64_t data_bytes) {
    const uint32_t crc = ZipCrc(ZipCrc(0, head.data(), head.size()), data, data_bytes);
    COUPLER_RETURN_IF_ERROR(LocalHeader(std::move(name), crc, head.size() + data_bytes));
    COUPLER_RETURN_IF_ERROR(Write(head.data(), head.size()));
    return Write(data, data_bytes);
  }

  // A member copied from another archive, checksum and all.
  Status Copy(std::string name, const StoredColumn& from, const StoredMember& member) {
    COUPLER_RETURN_IF_ERROR(LocalHeader(std::move(name), member.crc32, member.bytes));
    loff_t in = static_cast<loff_t>(member.offset);
    uint64_t left = member.bytes;
    while (left > 0) {
      const ssize_t n = ::copy_file_range(*from.fd, &in, fd_, nullptr, left, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // unsupported here (EXDEV, ENOSYS, EINVAL), or a short file: read
      left -= static_cast<uint64_t>(n);
      offset_ += static_cast<uint64_t>(n);
    }
    std::vector<std::byte> buffer(std::min<uint64_t>(left, 1u << 20));
    while (left > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
      COUPLER_RETURN_IF_ERROR(PreadFull(*from.fd, buffer.data(), n, in, from.path));
      COUPLER_RETURN_IF_ERROR(Write(buffer.data(), n));
      in += static_cast<loff_t>(n);
      left -= n;
    }
    return Status::Ok();
  }

  // The central directory and the end records.
  Status Finish() {
    const uint64_t directory_offset = offset_;
    std::string directory;
    for (const Entry& e : entries_) {
      const bool big_size = e.bytes >= kMax32;
      const bool big_offset = e.offset >= kMax32;
      std::string extra;
      if (big_size || big_offset) {
        std::string data;
        if (big_size) {
          Put64(data, e.bytes);  // uncompressed
          Put64(data, e.bytes);  // compressed
        }
        if (big_offset) Put64(data, e.offset);
        Put16(extra, kZip64ExtraId);
        Put16(extra, static_cast<uint16_t>(data.size()));
        extra += data;
      }
      Put32(directory, kCentralSignature);
      Put16(directory, 45);  // made by: zip 4.5 (zip64), MS-DOS attributes
      Put16(directory, extra.empty() ? 20 : 45);
      Put16(directory, Ascii(e.name) ? 0 : kUtf8Flag);
      Put16(directory, 0);  // stored
      Put16(directory, 0);
      Put16(directory, kDosDate);
      Put32(directory, e.crc);
      Put32(directory, big_size ? kMax32 : static_cast<uint32_t>(e.bytes));
      Put32(directory, big_size ? kMax32 : static_cast<uint32_t>(e.bytes));
      Put16(directory, static_cast<uint16_t>(e.name.size()));
      Put16(directory, static_cast<uint16_t>(extra.size()));
      Put16(directory, 0);  // comment
      Put16(directory, 0);  // disk
      Put16(directory, 0);  // internal attributes
      Put32(directory, 0);  // external attributes
      Put32(directory, big_offset ? kMax32 : static_cast<uint32_t>(e.offset));
      directory += e.name;
      directory += extra;
    }
    const uint64_t directory_bytes = directory.size();
    const uint64_t count = entries_.size();
    const bool zip64 = count >= 0xFFFF || directory_offset >= kMax32 || directory_bytes >= kMax32;
    if (zip64) {
      const uint64_t end64 = directory_offset + directory_bytes;
      Put32(directory, kZip64EndSignature);
      Put64(directory, kZip64EndBytes - 12);
      Put16(directory, 45);
      Put16(directory, 45);
      Put32(directory, 0);
      Put32(directory, 0);
      Put64(directory, count);
      Put64(directory, count);
      Put64(directory, directory_bytes);
      Put64(directory, directory_offset);
      Put32(directory, kZip64LocatorSignature);
      Put32(directory, 0);
      Put64(directory, end64);
      Put32(directory, 1);
    }
    Put32(directory, kEndSignature);
    Put16(directory, 0);
    Put16(directory, 0);
    Put16(directory, zip64 ? 0xFFFF : static_cast<uint16_t>(count));
    Put16(directory, zip64 ? 0xFFFF : static_cast<uint16_t>(count));
    Put32(directory, zip64 ? kMax32 : static_cast<uint32_t>(directory_bytes));
    Put32(directory, zip64 ? kMax32 : static_cast<uint32_t>(directory_offset));
    Put16(directory, 0);  // comment
    return Write(directory.data(), directory.size());
  }

  uint64_t size() const { return offset_; }

 private:
  Status LocalHeader(std::string name, uint32_t crc, uint64_t bytes) {
    if (name.size() > 0xFFFF) return InvalidArgument("a column name of " + std::to_string(name.size()) + " bytes");
    const bool big = bytes >= kMax32;
    std::string header;
    Put32(header, kLocalSignature);
    Put16(header, big ? 45 : 20);
    Put16(header, Ascii(name) ? 0 : kUtf8Flag);
    Put16(header, 0);  // stored
    Put16(header, 0);
    Put16(header, kDosDate);
    Put32(header, crc);
    Put32(header, big ? kMax32 : static_cast<uint32_t>(bytes));
    Put32(header, big ? kMax32 : static_cast<uint32_t>(bytes));
    Put16(header, static_cast<uint16_t>(name.size()));
    Put16(header, big ? 20 : 0);
    header += name;
    if (big) {
      Put16(header, kZip64ExtraId);
      Put16(header, 16);
      Put64(header, bytes);
      Put64(header, bytes);
    }
    entries_.push_back({std::move(name), crc, bytes, offset_});
    return Write(header.data(), header.size());
  }

  Status Write(const void* data, uint64_t size) {
    if (size == 0) return Status::Ok();
    COUPLER_RETURN_IF_ERROR(WriteFull(fd_, data, size, path_));
    offset_ += size;
    return Status::Ok();
  }

  int fd_;
  std::string path_;
  uint64_t offset_ = 0;
  std::vector<Entry> entries_;
};

Status WriteColumns(NpzWriter& writer, const Table& table) {
  for (const Column& column : table.columns()) {
    const std::string name = column.name() + std::string(kColumnSuffix);
    const std::string dictionary_name = column.name() + std::string(kDictionarySuffix);
    if (!column.loaded()) {
      const StoredColumn& stored = *column.stored();
      COUPLER_RETURN_IF_ERROR(writer.Copy(name, stored, stored.values));
      if (stored.dictionary) {
        COUPLER_RETURN_IF_ERROR(writer.Copy(dictionary_name, stored, *stored.dictionary));
      }
      continue;
    }
    const std::string head = EncodeArrayNpyHeader(column.dtype(), column.size());
    COUPLER_RETURN_IF_ERROR(writer.Add(name, head, column.data(), column.size_bytes()));
    if (column.dictionary() != nullptr) {
      const std::string json = EncodeDictionary(*column.dictionary());
      COUPLER_RETURN_IF_ERROR(writer.Add(dictionary_name, json, nullptr, 0));
    }
  }
  return writer.Finish();
}

// ---- reading ----

struct Member {
  std::string name;
  uint64_t offset = 0;  // of the data
  uint64_t bytes = 0;
  uint32_t crc = 0;
};

class NpzReader {
 public:
  NpzReader(std::string path, std::shared_ptr<const int> fd, uint64_t size)
      : path_(std::move(path)), fd_(std::move(fd)), size_(size) {}

  Result<Table> Read(const ColumnWanted& wanted, uint64_t* bytes_read) {
    COUPLER_ASSIGN_OR_RETURN(std::vector<Member> members, Directory());
    Table table;
    std::optional<uint64_t> rows;
    for (size_t i = 0; i < members.size(); ++i) {
      const Member& m = members[i];
      if (!m.name.ends_with(kColumnSuffix) || m.name.size() == kColumnSuffix.size()) {
        return Error("member '" + m.name + "' is not a column (<name>.npy) nor the dictionary "
                     "after one");
      }
      const std::string column = m.name.substr(0, m.name.size() - kColumnSuffix.size());
      const Member* dictionary = nullptr;
      if (i + 1 < members.size() && members[i + 1].name == column + std::string(kDictionarySuffix)) {
        dictionary = &members[++i];
      }
      uint64_t data_offset = 0;
      auto layout = ReadNpyLayoutAt(*fd_, m.offset, m.bytes, path_ + ": member '" + m.name + "'",
                                    &data_offset);
      if (!layout.ok()) return layout.status();
      if (layout->structured || layout->fields.size() != 1) {
        return Error("member '" + m.name + "' is not a 1-D array (a column of an .npz shard is)");
      }
      const ElementType dtype = layout->fields.front().dtype;
      if (rows && *rows != layout->rows) {
        return Error("member '" + m.name + "' has " + std::to_string(layout->rows) +
                     " values but the columns before it have " + std::to_string(*rows));
      }
      rows = layout->rows;
      if (dictionary != nullptr && dtype != ElementType::kInt32) {
        return Error("member '" + dictionary->name + "' is the dictionary of a " +
                     std::string(ElementTypeName(dtype)) + " column; codes are int32");
      }
      *bytes_read += data_offset - m.offset;  // the member's .npy header
      const ColumnInfo info{column, dtype, dictionary != nullptr};
      auto stored = std::make_shared<StoredColumn>();
      stored->fd = fd_;
      stored->path = path_;
      stored->values = {m.offset, m.bytes, m.crc};
      stored->values_data = data_offset;
      if (dictionary != nullptr) {
        stored->dictionary = StoredMember{dictionary->offset, dictionary->bytes, dictionary->crc};
      }
      Column values = Column::Stored(column, dtype, static_cast<size_t>(layout->rows), std::move(stored));
      if (!wanted || wanted(info)) COUPLER_RETURN_IF_ERROR(LoadStoredColumn(values, bytes_read));
      COUPLER_RETURN_IF_ERROR(table.AddColumn(std::move(values)));
    }
    if (table.num_columns() == 0) return Error("the archive holds no column");
    return table;
  }

 private:
  Status Error(const std::string& what) const { return InvalidArgument(path_ + ": " + what); }

  Status ReadAt(void* buffer, uint64_t size, uint64_t offset, std::string_view what) const {
    if (offset > size_ || size > size_ - offset) {
      return Error(std::string(what) + " runs past the end of the file (" + std::to_string(size_) +
                   " bytes)");
    }
    return PreadFull(*fd_, buffer, static_cast<size_t>(size), static_cast<off_t>(offset), path_);
  }

  Result<std::vector<Member>> Directory() {
    if (size_ < kEndBytes) return Error("not an .npz file: " + std::to_string(size_) + " bytes");
    // The end record sits in the last 22 bytes plus a comment of up to 64 KiB.
    const uint64_t tail_bytes = std::min<uint64_t>(size_, kEndBytes + 0xFFFF);
    std::vector<unsigned char> tail(static_cast<size_t>(tail_bytes));
    COUPLER_RETURN_IF_ERROR(ReadAt(tail.data(), tail_bytes, size_ - tail_bytes, "the end record"));
    std::optional<size_t> end;
    for (size_t i = tail.size() - kEndBytes + 1; i-- > 0;) {
      if (Get(&tail[i], 4) == kEndSignature) {
        end = i;
        break;
      }
    }
    if (!end) return Error("not a zip archive: no end of central directory record");
    const unsigned char* e = &tail[*end];
    uint64_t count = Get(e + 10, 2);
    uint64_t directory_bytes = Get(e + 12, 4);
    uint64_t directory_offset = Get(e + 16, 4);
    const uint64_t end_offset = size_ - tail_bytes + *end;
    if (count == 0xFFFF || directory_bytes == kMax32 || directory_offset == kMax32) {
      if (end_offset < kZip64LocatorBytes) return Error("a zip64 archive without its locator");
      unsigned char locator[kZip64LocatorBytes];
      COUPLER_RETURN_IF_ERROR(ReadAt(locator, sizeof(locator), end_offset - kZip64LocatorBytes,
                                     "the zip64 locator"));
      if (Get(locator, 4) != kZip64LocatorSignature) return Error("a zip64 archive without its locator");
      unsigned char end64[kZip64EndBytes];
      COUPLER_RETURN_IF_ERROR(ReadAt(end64, sizeof(end64), Get(locator + 8, 8), "the zip64 end record"));
      if (Get(end64, 4) != kZip64EndSignature) return Error("a bad zip64 end record");
      count = Get(end64 + 32, 8);
      directory_bytes = Get(end64 + 40, 8);
      directory_offset = Get(end64 + 48, 8);
    }
    if (directory_bytes > kMaxDirectoryBytes) {
      return Error("a central directory of " + std::to_string(directory_bytes) + " bytes");
    }
    std::vector<unsigned char> directory(static_cast<size_t>(directory_bytes));
    COUPLER_RETURN_IF_ERROR(
        ReadAt(directory.data(), directory_bytes, directory_offset, "the central directory"));
    std::vector<Member> members;
    size_t pos = 0;
    for (uint64_t n = 0; n < count; ++n) {
      if (pos + kCentralHeaderBytes > directory.size() || Get(&directory[pos], 4) != kCentralSignature) {
        return Error("a damaged central directory (entry " + std::to_string(n) + ")");
      }
      const unsigned char* h = &directory[pos];
      const uint64_t flags = Get(h + 8, 2);
      const uint64_t method = Get(h + 10, 2);
      Member m;
      m.crc = static_cast<uint32_t>(Get(h + 16, 4));
      uint64_t compressed = Get(h + 20, 4);
      uint64_t bytes = Get(h + 24, 4);
      const size_t name_len = Get(h + 28, 2);
      const size_t extra_len = Get(h + 30, 2);
      const size_t comment_len = Get(h + 32, 2);
      uint64_t local = Get(h + 42, 4);
      if (pos + kCentralHeaderBytes + name_len + extra_len + comment_len > directory.size()) {
        return Error("a damaged central directory (entry " + std::to_string(n) + ")");
      }
      m.name.assign(reinterpret_cast<const char*>(h + kCentralHeaderBytes), name_len);
      // zip64: the fields set to 0xFFFFFFFF follow in the extra field, in this order.
      const unsigned char* x = h + kCentralHeaderBytes + name_len;
      for (size_t k = 0; k + 4 <= extra_len;) {
        const uint64_t id = Get(x + k, 2);
        const size_t len = Get(x + k + 2, 2);
        if (k + 4 + len > extra_len) return Error("member '" + m.name + "': a damaged extra field");
        if (id == kZip64ExtraId) {
          size_t at = k + 4;
          auto take = [&](uint64_t& field) {
            if (field != kMax32 || at + 8 > k + 4 + len) return;
            field = Get(x + at, 8);
            at += 8;
          };
          take(bytes);
          take(compressed);
          take(local);
        }
        k += 4 + len;
      }
      pos += kCentralHeaderBytes + name_len + extra_len + comment_len;
      if ((flags & 1) != 0) return Error("member '" + m.name + "' is encrypted");
      if (method != 0 || compressed != bytes) {
        return Error("member '" + m.name + "' is compressed: shards are stored members "
                     "(np.savez writes them; np.savez_compressed does not)");
      }
      unsigned char lh[kLocalHeaderBytes];
      COUPLER_RETURN_IF_ERROR(ReadAt(lh, sizeof(lh), local, "a member's local header"));
      if (Get(lh, 4) != kLocalSignature) return Error("member '" + m.name + "': bad local header");
      m.offset = local + kLocalHeaderBytes + Get(lh + 26, 2) + Get(lh + 28, 2);
      m.bytes = bytes;
      if (m.offset > size_ || m.bytes > size_ - m.offset) {
        return Error("member '" + m.name + "' runs past the end of the file");
      }
      members.push_back(std::move(m));
    }
    return members;
  }

  std::string path_;
  std::shared_ptr<const int> fd_;
  uint64_t size_ = 0;
};

}  // namespace

Result<Column> ReadStoredRows(const Column& column, size_t begin, size_t end,
                              uint64_t* bytes_read) {
  COUPLER_CHECK(!column.loaded()) << "column '" << column.name() << "' is already loaded";
  COUPLER_CHECK(begin <= end && end <= column.size())
      << "rows " << begin << ".." << end << " of " << column.size();
  const std::shared_ptr<const StoredColumn> stored = column.stored();
  const std::string& path = stored->path;
  Column values(column.name(), column.dtype(), end - begin);
  if (values.size() > 0) {
    const uint64_t item = ElementSize(column.dtype());
    COUPLER_RETURN_IF_ERROR(PreadFull(*stored->fd, values.data(), values.size_bytes(),
                                      static_cast<off_t>(stored->values_data + begin * item), path));
    *bytes_read += values.size_bytes();
  }
  if (stored->dictionary) {
    const std::string member = column.name() + std::string(kDictionarySuffix);
    if (stored->dictionary->bytes > kMaxDictionaryBytes) {
      return InvalidArgument(path + ": member '" + member + "' is " +
                             std::to_string(stored->dictionary->bytes) + " bytes long");
    }
    std::string json(static_cast<size_t>(stored->dictionary->bytes), '\0');
    COUPLER_RETURN_IF_ERROR(PreadFull(*stored->fd, json.data(), json.size(),
                                      static_cast<off_t>(stored->dictionary->offset), path));
    *bytes_read += json.size();
    auto decoded = DecodeDictionary(json);
    if (!decoded.ok()) {
      return InvalidArgument(path + ": member '" + member + "': " + decoded.status().message());
    }
    if (Status codes = CheckCodes(values, decoded->size()); !codes.ok()) {
      return InvalidArgument(path + ": " + codes.message() + " (member '" + member + "')");
    }
    values.set_dictionary(std::make_shared<const Column::Dictionary>(std::move(decoded).value()));
  }
  return values;
}

Status LoadStoredColumn(Column& column, uint64_t* bytes_read) {
  if (column.loaded()) return Status::Ok();
  COUPLER_ASSIGN_OR_RETURN(Column values, ReadStoredRows(column, 0, column.size(), bytes_read));
  column = std::move(values);
  return Status::Ok();
}

bool LooksLikeZip(std::string_view head) {
  return head.size() >= 4 && (head.substr(0, 4) == std::string_view("PK\x03\x04", 4) ||
                              head.substr(0, 4) == std::string_view("PK\x05\x06", 4));
}

Result<Table> ReadNpz(std::string_view path, const ColumnWanted& wanted, uint64_t* bytes_read) {
  const std::string name(path);
  const int raw = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
  if (raw < 0) return ErrnoStatus("open", path, errno);
  // Shared by every Stored column of the table: closed when the last one goes.
  auto fd = std::shared_ptr<const int>(new int(raw), [](const int* p) {
    ::close(*p);
    delete p;
  });
  struct stat st {};
  if (::fstat(*fd, &st) != 0) return ErrnoStatus("stat", path, errno);
  if (!S_ISREG(st.st_mode)) return InvalidArgument(name + ": not a regular file");
  uint64_t read = 0;
  auto table = NpzReader(name, std::move(fd), static_cast<uint64_t>(st.st_size)).Read(wanted, &read);
  if (bytes_read != nullptr) *bytes_read = read;
  return table;
}

Status WriteNpzAtomic(std::string_view path, const Table& table, uint64_t* bytes_written) {
  const std::string final_path(path);
  if (table.num_columns() == 0) return InvalidArgument("write " + final_path + ": a shard needs at least one column");
  if (Status valid = table.Validate(); !valid.ok()) return valid.WithContext("write " + final_path);
  COUPLER_RETURN_IF_ERROR(CreateParentDirectories(final_path));
  const std::string temp = TempPathFor(final_path, /*keep_extension=*/true);
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (!fd.valid()) return ErrnoStatus("create", temp, errno);
  NpzWriter writer(fd.get(), temp);
  Status status = WriteColumns(writer, table);
  if (status.ok()) status = fd.Close(temp);
  if (!status.ok()) {
    fd.Reset();
    RemoveQuietly(temp);
    return status;
  }
  if (bytes_written != nullptr) *bytes_written = writer.size();
  return RenameOver(temp, final_path);
}

}  // namespace coupler::io
