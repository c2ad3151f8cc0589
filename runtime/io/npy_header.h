// The .npy preamble (magic, version, header length, header dict): parsing what a file declares
// into a record layout, and encoding the header numpy itself would write for a Table.
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/io/dtype.h"
#include "runtime/io/table.h"
#include "runtime/status.h"

namespace coupler::io {

inline constexpr std::string_view kNpyMagic = "\x93NUMPY";
// Versions 1.0 (2-byte header length) and 2.0/3.0 (4-byte); 3.0 allows UTF-8 field names.
inline constexpr size_t kNpyPreambleV1 = 10;
inline constexpr size_t kNpyPreambleV2 = 12;
// Bigger headers are refused before reading them: a hostile length must not allocate gigabytes.
inline constexpr size_t kMaxNpyHeaderBytes = 16u << 20;
// A plain 2-D array becomes one column per array column; more than this is not a table.
inline constexpr uint64_t kMaxNpyColumns = 100'000;

// One column as it sits inside each record.
struct NpyField {
  std::string name;
  ElementType dtype = ElementType::kFloat32;
  size_t offset = 0;  // bytes from the start of the record
};

struct NpyLayout {
  std::vector<NpyField> fields;
  size_t record_bytes = 0;
  uint64_t rows = 0;
  bool structured = false;  // false: a plain 1-D or 2-D array, columns named c0, c1, ...
};

// Validates the header dict text (everything after the length field) and returns the layout.
// InvalidArgument says what is wrong; the caller adds the file name.
Result<NpyLayout> ParseNpyHeader(std::string_view header);

// The complete preamble for a 1-D structured array of `table`'s columns, padded with spaces to
// a multiple of 64 bytes as numpy does. InvalidArgument for a table that cannot be a shard.
Result<std::string> EncodeNpyHeader(const Table& table);

// The complete preamble of a plain 1-D array of `rows` values of `dtype` (one column of an .npz
// shard), padded as numpy pads it.
std::string EncodeArrayNpyHeader(ElementType dtype, uint64_t rows);

}  // namespace coupler::io
