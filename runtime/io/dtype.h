// The element types a shard column can hold, and their .npy type strings. Shards are always
// little-endian; bfloat16 has no numpy type, so it travels as its uint16 bit pattern ('<u2').
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace coupler::io {

enum class DType : uint8_t { kFloat32, kInt32, kFloat16, kBfloat16, kFloat64 };

constexpr size_t ItemSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kFloat16:
    case DType::kBfloat16: return 2;
    case DType::kFloat64: return 8;
  }
  return 0;
}

// "float32", "int32", "float16", "bfloat16", "float64": the names ops and errors use.
std::string_view DTypeName(DType dtype);

// '<f4', '<i4', '<f2', '<u2', '<f8'.
std::string_view NpyDescr(DType dtype);

// The inverse of NpyDescr; nullopt for anything else (big-endian included).
std::optional<DType> DTypeFromNpyDescr(std::string_view descr);

// The C++ element type that stores a dtype's values: fp16 and bf16 are raw bits.
template <typename T>
constexpr bool StoresDType(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return std::is_same_v<T, float>;
    case DType::kInt32: return std::is_same_v<T, int32_t>;
    case DType::kFloat16:
    case DType::kBfloat16: return std::is_same_v<T, uint16_t>;
    case DType::kFloat64: return std::is_same_v<T, double>;
  }
  return false;
}

}  // namespace coupler::io
