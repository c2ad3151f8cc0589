// Moving one field between packed records (the .npy layout) and a contiguous column. The
// copies go through memcpy of a compile-time size: fields sit at any byte offset, so a typed
// load would be misaligned, and a fixed-size memcpy compiles to a single move.
#pragma once

#include <cstddef>
#include <cstring>

namespace coupler::io {

namespace internal {
template <size_t kItem>
inline void Gather(const std::byte* records, size_t record_bytes, size_t rows, std::byte* dst) {
  for (size_t r = 0; r < rows; ++r) std::memcpy(dst + r * kItem, records + r * record_bytes, kItem);
}
template <size_t kItem>
inline void Scatter(const std::byte* src, size_t rows, std::byte* records, size_t record_bytes) {
  for (size_t r = 0; r < rows; ++r) std::memcpy(records + r * record_bytes, src + r * kItem, kItem);
}
}  // namespace internal

// dst[r] = the field at `offset` of record r, for `rows` records.
inline void GatherField(const std::byte* records, size_t record_bytes, size_t rows, size_t offset,
                        size_t item, std::byte* dst) {
  records += offset;
  switch (item) {
    case 2: internal::Gather<2>(records, record_bytes, rows, dst); return;
    case 4: internal::Gather<4>(records, record_bytes, rows, dst); return;
    case 8: internal::Gather<8>(records, record_bytes, rows, dst); return;
    default:
      for (size_t r = 0; r < rows; ++r) std::memcpy(dst + r * item, records + r * record_bytes, item);
  }
}

// The field at `offset` of record r = src[r], for `rows` records.
inline void ScatterField(const std::byte* src, size_t item, size_t rows, std::byte* records,
                         size_t record_bytes, size_t offset) {
  records += offset;
  switch (item) {
    case 2: internal::Scatter<2>(src, rows, records, record_bytes); return;
    case 4: internal::Scatter<4>(src, rows, records, record_bytes); return;
    case 8: internal::Scatter<8>(src, rows, records, record_bytes); return;
    default:
      for (size_t r = 0; r < rows; ++r) std::memcpy(records + r * record_bytes, src + r * item, item);
  }
}

}  // namespace coupler::io
