#include "runtime/io/dtype.h"

namespace coupler::io {

std::string_view NpyDescr(ElementType dtype) {
  switch (dtype) {
    case ElementType::kFloat32: return "<f4";
    case ElementType::kInt32: return "<i4";
    case ElementType::kFloat16: return "<f2";
    case ElementType::kBFloat16: return "<u2";
    case ElementType::kFloat64: return "<f8";
    case ElementType::kInt64: return "<i8";
    case ElementType::kBool: return "|b1";
    case ElementType::kDatetime64: return "<M8[ns]";
  }
  return "";
}

std::optional<ElementType> ElementTypeFromNpyDescr(std::string_view descr) {
  for (ElementType d : {ElementType::kFloat32, ElementType::kInt32, ElementType::kFloat16,
                        ElementType::kBFloat16, ElementType::kFloat64, ElementType::kInt64,
                        ElementType::kBool, ElementType::kDatetime64}) {
    if (descr == NpyDescr(d)) return d;
  }
  // numpy spells a one-byte type with either byte-order mark.
  if (descr == "<b1" || descr == "=b1") return ElementType::kBool;
  return std::nullopt;
}

}  // namespace coupler::io
