// Portable fp16 (IEEE binary16) and bf16 conversions to and from float, as raw uint16_t bits.
// Header-only and free of CUDA headers so the CPU build works without a toolkit, yet usable in
// CUDA kernels (COUPLER_HD), so every backend rounds exactly alike.
//
// float -> 16 bits rounds to nearest, ties to even. NaN stays NaN (made quiet, sign and top
// payload bits kept); values that round past the largest finite value become inf; fp16
// subnormals are produced and read; bf16 shares fp32's exponent so only the mantissa rounds.
#pragma once

#include <cstdint>

#include "runtime/precision/element_type.h"
#include "runtime/precision/host_device.h"

namespace coupler::precision {

inline constexpr float kFp16Max = 65504.0f;
inline constexpr uint16_t kFp16PositiveInf = 0x7C00;
inline constexpr uint16_t kBf16PositiveInf = 0x7F80;

// __builtin_bit_cast rather than std::bit_cast: the latter is a host-only constexpr function
// that nvcc refuses to call from device code without --expt-relaxed-constexpr.
COUPLER_HD constexpr uint32_t Float32Bits(float f) { return __builtin_bit_cast(uint32_t, f); }
COUPLER_HD constexpr float Float32FromBits(uint32_t u) { return __builtin_bit_cast(float, u); }

// All ones when a < b, else zero; both must be below 2^31 (magnitudes of float bits).
COUPLER_HD constexpr uint32_t BelowMask(uint32_t a, uint32_t b) {
  return static_cast<uint32_t>(static_cast<int32_t>(a - b) >> 31);
}

// Computes every candidate result and blends them with masks, without branches or ternaries,
// so a CPU loop over a column vectorizes (plain SSE2 included) and a GPU warp never diverges.
// Ternaries would let GCC sink the float add below into a branch, which it then refuses to
// if-convert under -ftrapping-math (the default), leaving the whole loop scalar.
COUPLER_HD constexpr uint16_t FloatToHalfBits(float f) {
  const uint32_t x = Float32Bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7FFFFFFFu;

  // Normal result: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to
  // nearest even; a carry out of the mantissa correctly bumps the exponent.
  const uint32_t odd = (a >> 13) & 1u;
  const uint32_t normal = (a - 0x38000000u + 0x0FFFu + odd) >> 13;

  // Subnormal result (|f| < 2^-14): adding 0.5f puts the fp16 subnormal step 2^-24 exactly at
  // fp32's last mantissa bit, so the FPU's own round-to-nearest-even does the rounding; the
  // mantissa then holds the count of 2^-24 steps (1024 means the smallest normal, 0x0400).
  // The sum is always a normal float, so flush-to-zero modes cannot change it, and a
  // denormals-are-zero mode only zeroes inputs that round to 0 anyway.
  const uint32_t subnormal = Float32Bits(Float32FromBits(a) + 0.5f) - 0x3F000000u;

  const uint32_t nan = 0x7E00u | ((a >> 13) & 0x03FFu);  // quiet bit set, top payload kept
  const uint32_t is_subnormal = BelowMask(a, 0x38800000u);
  // 65520 and above round to inf (65520 itself is a tie whose even neighbour is inf).
  const uint32_t is_finite = BelowMask(a, 0x477FF000u);
  const uint32_t is_nan = ~BelowMask(a, 0x7F800001u);
  uint32_t h = (subnormal & is_subnormal) | (normal & ~is_subnormal);
  h = (h & is_finite) | (0x7C00u & ~is_finite);
  h = (nan & is_nan) | (h & ~is_nan);
  return static_cast<uint16_t>(sign | h);
}

COUPLER_HD constexpr float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x03FFu;
  if (exponent == 0x1Fu) {  // inf, or NaN made quiet
    return Float32FromBits(sign | 0x7F800000u | (mantissa << 13) |
                           (mantissa != 0 ? 0x00400000u : 0u));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24 is exact in fp32
    return Float32FromBits(sign |
                           Float32Bits(static_cast<float>(mantissa) * 0x1p-24f));
  }
  return Float32FromBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

COUPLER_HD constexpr uint16_t FloatToBf16Bits(float f) {
  const uint32_t x = Float32Bits(f);
  // Adding 0x7FFF plus the kept lsb rounds the low 16 bits to nearest even; a carry may walk
  // into the exponent, which is exactly right (up to inf for the largest finite values).
  const uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  const uint32_t nan = (x >> 16) | 0x0040u;
  return static_cast<uint16_t>((x & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

COUPLER_HD constexpr float Bf16BitsToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) x |= 0x00400000u;  // NaN made quiet
  return Float32FromBits(x);
}

COUPLER_HD constexpr uint16_t EncodeHalf(float f, ElementType format) {
  return format == ElementType::kFloat16 ? FloatToHalfBits(f) : FloatToBf16Bits(f);
}

COUPLER_HD constexpr float DecodeHalf(uint16_t bits, ElementType format) {
  return format == ElementType::kFloat16 ? HalfBitsToFloat(bits) : Bf16BitsToFloat(bits);
}

constexpr const char* HalfFormatName(ElementType format) { return ShortElementTypeName(format); }

static_assert(FloatToHalfBits(1.0f) == 0x3C00 && HalfBitsToFloat(0x3C00) == 1.0f);
static_assert(FloatToHalfBits(65504.0f) == 0x7BFF && FloatToHalfBits(65520.0f) == 0x7C00);
static_assert(FloatToBf16Bits(1.0f) == 0x3F80 && Bf16BitsToFloat(0x3F80) == 1.0f);

}  // namespace coupler::precision
