#include "runtime/io/dtype.h"

namespace coupler::io {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kInt32: return "int32";
    case DType::kFloat16: return "float16";
    case DType::kBfloat16: return "bfloat16";
    case DType::kFloat64: return "float64";
  }
  return "unknown";
}

std::string_view NpyDescr(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "<f4";
    case DType::kInt32: return "<i4";
    case DType::kFloat16: return "<f2";
    case DType::kBfloat16: return "<u2";
    case DType::kFloat64: return "<f8";
  }
  return "";
}

std::optional<DType> DTypeFromNpyDescr(std::string_view descr) {
  for (DType d : {DType::kFloat32, DType::kInt32, DType::kFloat16, DType::kBfloat16,
                  DType::kFloat64}) {
    if (descr == NpyDescr(d)) return d;
  }
  return std::nullopt;
}

}  // namespace coupler::io
