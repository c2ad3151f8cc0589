#include "runtime/precision/element_type.h"

namespace coupler {

std::string_view ElementTypeName(ElementType type) {
  switch (type) {
    case ElementType::kFloat32: return "float32";
    case ElementType::kFloat16: return "float16";
    case ElementType::kBFloat16: return "bfloat16";
    case ElementType::kInt32: return "int32";
    case ElementType::kInt64: return "int64";
    case ElementType::kFloat64: return "float64";
    case ElementType::kBool: return "bool";
    case ElementType::kDatetime64: return "datetime64[ns]";
  }
  return "unknown";
}

std::optional<ElementType> ParseElementType(std::string_view name) {
  struct Spelling {
    std::string_view name;
    ElementType type;
  };
  static constexpr Spelling kSpellings[] = {
      {"float32", ElementType::kFloat32}, {"fp32", ElementType::kFloat32},
      {"float16", ElementType::kFloat16}, {"fp16", ElementType::kFloat16},
      {"bfloat16", ElementType::kBFloat16}, {"bf16", ElementType::kBFloat16},
      {"int32", ElementType::kInt32},     {"int64", ElementType::kInt64},
      {"float64", ElementType::kFloat64}, {"bool", ElementType::kBool},
      {"datetime64[ns]", ElementType::kDatetime64}, {"datetime", ElementType::kDatetime64},
  };
  for (const Spelling& s : kSpellings) {
    if (s.name == name) return s.type;
  }
  return std::nullopt;
}

}  // namespace coupler
