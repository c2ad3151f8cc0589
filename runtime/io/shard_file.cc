#include "runtime/io/shard_file.h"

#include <fcntl.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/io/dictionary_file.h"
#include "runtime/io/npy_reader.h"
#include "runtime/io/unique_fd.h"

namespace coupler::io {
namespace {

// The first bytes of the file; NotFound when there is none.
Result<std::string> Head(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("open", path, errno);
  std::string head(8, '\0');
  ssize_t n = 0;
  do {
    n = ::pread(fd.get(), head.data(), head.size(), 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoStatus("read", path, errno);
  head.resize(static_cast<size_t>(n));
  return head;
}

// An .npy of records, and the sidecar "<path>.dict.json" when there is one.
Result<Table> ReadRecords(const std::string& path, uint64_t* bytes_read) {
  uint64_t bytes = 0;
  COUPLER_ASSIGN_OR_RETURN(Table table, ReadNpy(path, &bytes));
  const std::string sidecar = DictionarySidecarPath(path);
  std::error_code ec;
  if (std::filesystem::exists(sidecar, ec)) {
    std::ifstream in(sidecar, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in || in.bad()) return Internal(sidecar + ": cannot read the dictionary sidecar");
    const std::string json = std::move(text).str();
    bytes += json.size();
    auto dictionaries = DecodeDictionaries(json);
    if (!dictionaries.ok()) return dictionaries.status().WithContext(sidecar);
    COUPLER_RETURN_IF_ERROR(
        AttachDictionaries(table, std::move(dictionaries).value()).WithContext(sidecar));
  }
  if (bytes_read != nullptr) *bytes_read = bytes;
  return table;
}

}  // namespace

Result<Table> ReadShardFile(std::string_view path, const ColumnWanted& wanted,
                            uint64_t* bytes_read) {
  const std::string name(path);
  COUPLER_ASSIGN_OR_RETURN(const std::string head, Head(name));
  if (LooksLikeZip(head)) return ReadNpz(name, wanted, bytes_read);
  return ReadRecords(name, bytes_read);
}

}  // namespace coupler::io
