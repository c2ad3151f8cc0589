// The element types coupler moves and computes in, one enum for the whole project: shard
// columns (.npy), the cast op, training precisions, gradient wire types, collectives and the
// 16-bit encodings of precision/half.h. A place that allows only some of them (a training
// precision is fp32/fp16/bf16) checks that subset where the value comes in.
// Free of CUDA headers and usable from CUDA code (plain enum, constexpr size).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace coupler {

// The numbers are pinned: shard headers do not carry them, but wire messages and saved plans do.
// kBool is numpy's bool (one byte, 0 or 1); kDatetime64 is numpy's datetime64[ns]: int64
// nanoseconds since the Unix epoch, with NaT (the int64 minimum) for a missing value.
enum class ElementType : uint8_t {
  kFloat32 = 0,
  kFloat16 = 1,
  kBFloat16 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kFloat64 = 5,
  kBool = 6,
  kDatetime64 = 7,
};

constexpr size_t ElementSize(ElementType type) {
  switch (type) {
    case ElementType::kFloat16:
    case ElementType::kBFloat16: return 2;
    case ElementType::kBool: return 1;
    case ElementType::kFloat32:
    case ElementType::kInt32: return 4;
    case ElementType::kInt64:
    case ElementType::kDatetime64:
    case ElementType::kFloat64: return 8;
  }
  return 0;
}

// "float32", "float16", "bfloat16", "int32", "int64", "float64", "bool", "datetime64[ns]": the
// names ops, shards, plans and errors use (numpy's).
std::string_view ElementTypeName(ElementType type);

// "fp32", "fp16" and "bf16", the spellings of training precisions and kernel storage in configs,
// reports and logs; the other types by their names above. constexpr for precision/half.h.
constexpr const char* ShortElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kFloat32: return "fp32";
    case ElementType::kFloat16: return "fp16";
    case ElementType::kBFloat16: return "bf16";
    case ElementType::kInt32: return "int32";
    case ElementType::kInt64: return "int64";
    case ElementType::kFloat64: return "float64";
    case ElementType::kBool: return "bool";
    case ElementType::kDatetime64: return "datetime64[ns]";
  }
  return "unknown";
}

// The names above and the short spellings "fp32", "fp16" and "bf16"; nullopt for anything else.
std::optional<ElementType> ParseElementType(std::string_view name);

}  // namespace coupler
