// Writing a shard: a Table as a 1-D structured .npy array (one little-endian field per column),
// so `numpy.load(path)['col']` gives a column back. Published atomically: readers never see a
// half-written file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::io {

// Writes `<path>.tmp.<pid>.<random>` in the same directory, then renames it over `path`.
// Creates missing parent directories. No fsync: a shard lost in a crash is recomputed by
// re-running its task. The table needs at least one column, unique non-empty names, and equal
// column lengths (InvalidArgument otherwise). Format 1.0, or 2.0 for a header over 64 KiB, or
// 3.0 when a column name is not ASCII.
Status WriteNpyAtomic(std::string_view path, const Table& table);

// A plain 1-D little-endian float32 array (np.load gives shape (n,), dtype float32), atomically.
Status WriteFloatArrayNpyAtomic(const std::string& path, std::span<const float> values);

// The size WriteNpyAtomic gives the file (header + data); 0 for a table it would refuse.
uint64_t NpyFileSize(const Table& table);

}  // namespace coupler::io
