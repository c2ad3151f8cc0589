// The element types a shard column can hold, and their .npy type strings. Shards are always
// little-endian; bfloat16 has no numpy type, so it travels as its uint16 bit pattern ('<u2').
// Shards hold float32, int32, float16, bfloat16 and float64; int64 has no column storage.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "runtime/precision/element_type.h"

namespace coupler::io {

// '<f4', '<i4', '<f2', '<u2', '<f8'; empty for a type shards do not hold.
std::string_view NpyDescr(ElementType dtype);

// The inverse of NpyDescr; nullopt for anything else (big-endian included).
std::optional<ElementType> ElementTypeFromNpyDescr(std::string_view descr);

// The C++ element type that stores a column's values: fp16 and bf16 are raw bits.
template <typename T>
constexpr bool StoresElementType(ElementType dtype) {
  switch (dtype) {
    case ElementType::kFloat32: return std::is_same_v<T, float>;
    case ElementType::kInt32: return std::is_same_v<T, int32_t>;
    case ElementType::kFloat16:
    case ElementType::kBFloat16: return std::is_same_v<T, uint16_t>;
    case ElementType::kFloat64: return std::is_same_v<T, double>;
    case ElementType::kInt64: return false;
  }
  return false;
}

}  // namespace coupler::io
