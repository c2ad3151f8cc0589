// Reading and writing one shard file, whatever wrote it: coupler's ops write an .npz of columns
// (npz_file.h); a command (exec) or a user's dataset may hand over an .npy of records, with the
// dictionary sidecar an earlier release wrote beside it (dictionary_file.h). The format is told
// by the file's first bytes, not its name.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/io/npz_file.h"
#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::io {

// The shard at `path`. From an .npz only the columns `wanted` asks for are loaded (all when it
// is empty); an .npy of records is read whole. NotFound when there is no file. `bytes_read`
// receives the bytes read.
Result<Table> ReadShardFile(std::string_view path, const ColumnWanted& wanted = {},
                            uint64_t* bytes_read = nullptr);

}  // namespace coupler::io
