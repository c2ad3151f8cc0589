// A shard as an .npz of columns: a zip archive of stored (uncompressed) members, one plain 1-D
// .npy per column ("<column>.npy", in column order) and, after each categorical column, its
// dictionary ("<column>.dictionary.json", a JSON list; dictionary_file.h). np.load(path) reads
// it as it reads any np.savez file: `np.load(path)["id"]` is the id column.
//
// Column-major on disk means an op reads only the columns it computes with: the reader loads
// what `wanted` asks for and leaves every other column Stored (table.h), and the writer copies a
// Stored column's members from the file they came from (copy_file_range: no pass through user
// memory, and on a filesystem that shares extents, no copy at all), their checksums carried
// over. Layout: https://pkware.cachefly.net/webdocs/casestudies/APPNOTE.TXT (zip64 where a
// member or the archive passes 4 GiB).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "runtime/io/dtype.h"
#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::io {

// What a reader knows of a column before loading it.
struct ColumnInfo {
  std::string_view name;
  ElementType dtype;
  bool categorical;
};
// Whether to load a column; the others stay Stored. An empty function loads every column.
using ColumnWanted = std::function<bool(const ColumnInfo&)>;

// True when `head` (a file's first bytes) starts a zip archive.
bool LooksLikeZip(std::string_view head);

// Reads an .npz shard. Every member is validated (a stored .npy: a plain 1-D little-endian array
// of a shard type, all of one length; a dictionary member after its int32 column); anything else
// is an InvalidArgument naming the file and the member: compressed members (np.savez_compressed),
// encryption, a 2-D or structured member, members of different lengths, a dictionary whose codes
// do not match. `bytes_read` receives the bytes actually read (directory and loaded members).
Result<Table> ReadNpz(std::string_view path, const ColumnWanted& wanted,
                      uint64_t* bytes_read = nullptr);

// Reads a Stored column's values (and dictionary) from its file into it, checked as ReadNpz
// checks them; a loaded column is left as it is. Adds the bytes read to *bytes_read.
Status LoadStoredColumn(Column& column, uint64_t* bytes_read);

// Rows [begin, end) of a Stored column (with its whole dictionary), read from its file and
// checked as LoadStoredColumn checks: a reader that needs a range of a big shard (a sort's
// reduce) reads that range only. The column itself stays unread.
Result<Column> ReadStoredRows(const Column& column, size_t begin, size_t end, uint64_t* bytes_read);

// Writes `table` as an .npz (temporary beside it, then renamed over `path`; parent directories
// created; no fsync, as for every shard). `bytes_written` receives the file's size.
Status WriteNpzAtomic(std::string_view path, const Table& table,
                      uint64_t* bytes_written = nullptr);

}  // namespace coupler::io
