// The element types a shard column can hold, and their .npy type strings. Shards are always
// little-endian; bfloat16 has no numpy type, so it travels as its uint16 bit pattern ('<u2').
// Every ElementType is a shard column type: bool is numpy's one-byte bool ('|b1') and datetime64
// is '<M8[ns]', so numpy reads timestamps as datetime64[ns] without coupler.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "runtime/precision/element_type.h"

namespace coupler::io {

// A missing value in an int64 or datetime64 column: the int64 minimum, which numpy shows as NaT
// in a datetime64 column (and which no CSV integer import accepts as a value). Float columns
// hold NaN; int32 columns (labels) and bool columns hold no missing values.
inline constexpr int64_t kMissingInt64 = std::numeric_limits<int64_t>::min();

// An int64 or datetime64 value as a double for arithmetic: NaN when it is missing.
inline double Int64AsDouble(int64_t v) {
  return v == kMissingInt64 ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(v);
}

// '<f4', '<i4', '<f2', '<u2', '<f8', '<i8', '|b1', '<M8[ns]'.
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
    case ElementType::kInt64:
    case ElementType::kDatetime64: return std::is_same_v<T, int64_t>;
    case ElementType::kBool: return std::is_same_v<T, uint8_t>;
  }
  return false;
}

}  // namespace coupler::io
