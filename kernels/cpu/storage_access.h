// Element access for the storage formats of train_kernels.h, for the CPU training loops. Each
// format is a small traits type so a loop is compiled once per format with the load and store
// inlined (a per-element switch would keep the loops from vectorizing).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/train_kernels.h"
#include "runtime/check.h"
#include "runtime/precision/half.h"

namespace coupler::kernels {

struct Fp32Format {
  using Bits = float;
  static constexpr ElementType kStorage = ElementType::kFloat32;
  static float Load(float x) { return x; }
  static float Store(float x) { return x; }
};

// precision::HalfBitsToFloat branches on the exponent, which keeps GCC from vectorizing the
// widening loops that feed every mixed-precision GEMM tile. This computes the same bits (the
// tests compare all 65536 inputs) with integer adds and masks, plus one exact float subtract
// for subnormals, so the loop vectorizes even with plain SSE2.
struct Fp16Format {
  using Bits = uint16_t;
  static constexpr ElementType kStorage = ElementType::kFloat16;
  static float Load(uint16_t h) {
    // Exponent and mantissa moved to their fp32 places, exponent rebiased (15 -> 127).
    const uint32_t shifted = static_cast<uint32_t>(h & 0x7FFFu) << 13;
    const uint32_t exponent = shifted & 0x0F800000u;
    const uint32_t is_inf_nan = 0u - static_cast<uint32_t>(exponent == 0x0F800000u);
    const uint32_t is_subnormal = 0u - static_cast<uint32_t>(exponent == 0u);
    uint32_t bits = shifted + 0x38000000u;
    // inf/NaN: all-ones exponent. A NaN also gets the quiet bit (bit 22), as HalfBitsToFloat
    // does: adding 0x7FFFFF to a non-zero mantissa carries into bit 23.
    const uint32_t quiet = (((shifted & 0x007FFFFFu) + 0x007FFFFFu) >> 1) & 0x00400000u;
    bits += 0x38000000u & is_inf_nan;
    bits |= quiet & is_inf_nan;
    // Zero and subnormals: 2^-14 * (1 + m / 1024) - 2^-14 = m * 2^-24, exact in fp32.
    const float subnormal = precision::Float32FromBits(bits + 0x00800000u) - 0x1p-14f;
    bits = (bits & ~is_subnormal) | (precision::Float32Bits(subnormal) & is_subnormal);
    return precision::Float32FromBits(bits | (static_cast<uint32_t>(h & 0x8000u) << 16));
  }
  static uint16_t Store(float x) { return precision::FloatToHalfBits(x); }
};

struct Bf16Format {
  using Bits = uint16_t;
  static constexpr ElementType kStorage = ElementType::kBFloat16;
  static float Load(uint16_t b) {
    const uint32_t x = static_cast<uint32_t>(b) << 16;
    const uint32_t is_nan = 0u - static_cast<uint32_t>((x & 0x7FFFFFFFu) > 0x7F800000u);
    return precision::Float32FromBits(x | (0x00400000u & is_nan));
  }
  static uint16_t Store(float x) { return precision::FloatToBf16Bits(x); }
};

// Calls f(Format{}) with the traits type of `storage`.
template <typename F>
inline decltype(auto) WithFormat(ElementType storage, F&& f) {
  switch (storage) {
    case ElementType::kFloat32:
      return f(Fp32Format{});
    case ElementType::kFloat16:
      return f(Fp16Format{});
    case ElementType::kBFloat16:
      return f(Bf16Format{});
    default: break;  // not a storage format
  }
  COUPLER_CHECK(false) << "unknown Storage " << static_cast<int>(storage);
  return f(Fp32Format{});  // unreachable: the check aborts
}

template <typename Format>
inline const typename Format::Bits* Elements(const void* data) {
  return static_cast<const typename Format::Bits*>(data);
}

template <typename Format>
inline typename Format::Bits* Elements(void* data) {
  return static_cast<typename Format::Bits*>(data);
}

// Widens n elements; in blocks of 16 so the -O2 "very cheap" vectorizer takes the loop (see
// column_loop.h).
template <typename Format>
inline void WidenRow(const typename Format::Bits* __restrict in, float* __restrict out, size_t n) {
  constexpr size_t kBlock = 16;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) out[i + j] = Format::Load(in[i + j]);
  }
  for (; i < n; ++i) out[i] = Format::Load(in[i]);
}

template <typename Format>
inline void RoundRow(const float* __restrict in, typename Format::Bits* __restrict out, size_t n) {
  constexpr size_t kBlock = 16;
  size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (size_t j = 0; j < kBlock; ++j) out[i + j] = Format::Store(in[i + j]);
  }
  for (; i < n; ++i) out[i] = Format::Store(in[i]);
}

}  // namespace coupler::kernels
