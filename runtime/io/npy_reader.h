// Reading a shard: a .npy file holding a 1-D structured array (one field per column) or a plain
// 1-D/2-D array (columns c0, c1, ...), transposed into a columnar Table. Files come from users,
// so everything is validated and every problem is an InvalidArgument naming the file.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/io/npy_header.h"
#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::io {

// Checks magic, version (1.0, 2.0, 3.0), header length, header dict, dtypes (<f4 <i4 <f2 <u2
// <f8; big-endian refused) and that the file is exactly header + rows * record bytes long.
// NotFound when the file does not exist. `file_bytes`, when given, receives the file's size.
Result<Table> ReadNpy(std::string_view path, uint64_t* file_bytes = nullptr);

// The layout of the .npy occupying bytes [offset, offset + size) of `fd` (an .npz member),
// validated as ReadNpy validates a file (`name` in its errors); *data_offset receives the file
// offset where its data begins.
Result<NpyLayout> ReadNpyLayoutAt(int fd, uint64_t offset, uint64_t size, std::string_view name,
                                  uint64_t* data_offset);

}  // namespace coupler::io
