// Typed test values for the collective tests, shared by the in-process unit tests and the
// mpirun tests: small integers stored in any ElementType, so every sum is exact and a reference
// can be computed in double.
#pragma once

#include <cstddef>
#include <cstdint>

#include "train/comm/communicator.h"
#include "runtime/precision/half.h"

namespace coupler::comm::testing {

inline void Store(ElementType type, double v, void* buf, size_t i) {
  switch (type) {
    case ElementType::kFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); return;
    case ElementType::kFloat64: static_cast<double*>(buf)[i] = v; return;
    case ElementType::kInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); return;
    case ElementType::kInt64:
    case ElementType::kDatetime64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); return;
    case ElementType::kBool: static_cast<uint8_t*>(buf)[i] = v != 0; return;
    case ElementType::kFloat16:
      static_cast<uint16_t*>(buf)[i] = precision::FloatToHalfBits(static_cast<float>(v));
      return;
    case ElementType::kBFloat16:
      static_cast<uint16_t*>(buf)[i] = precision::FloatToBf16Bits(static_cast<float>(v));
      return;
  }
}

inline double Load(ElementType type, const void* buf, size_t i) {
  switch (type) {
    case ElementType::kFloat32: return static_cast<const float*>(buf)[i];
    case ElementType::kFloat64: return static_cast<const double*>(buf)[i];
    case ElementType::kInt32: return static_cast<const int32_t*>(buf)[i];
    case ElementType::kInt64:
    case ElementType::kDatetime64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case ElementType::kBool: return static_cast<const uint8_t*>(buf)[i];
    case ElementType::kFloat16: return precision::HalfBitsToFloat(static_cast<const uint16_t*>(buf)[i]);
    case ElementType::kBFloat16: return precision::Bf16BitsToFloat(static_cast<const uint16_t*>(buf)[i]);
  }
  return 0;
}

// Small integers in [-11, 11]: exact in every type and in any summation order.
inline double Value(int rank, size_t i) {
  return static_cast<double>(static_cast<int>((i * 7 + static_cast<size_t>(rank) * 13) % 23) - 11);
}

}  // namespace coupler::comm::testing
