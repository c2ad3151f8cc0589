// The CSV kernel's fast path for numbers as exports write them: `-12.3456`, `7`. One pass reads
// the digits and stops at the first other byte (the field's end, when it is a comma), so the
// field is scanned once instead of being split first and parsed after.
//
// Exact, not approximate: a plain decimal whose digits form an integer m <= 2^24 with k <= 10
// digits after the point is m / 10^k, and both m and 10^k are exact float32 values, so a single
// IEEE division rounds the quotient correctly (Clinger's fast path); longer mantissas go through
// double the same way, with a check that rounding twice cannot have moved the result. Either
// way it is the float std::from_chars returns for the same text; anything else (an exponent, a
// '+', blanks, NA, a value next to a rounding tie) returns nullptr and takes the general path.
#pragma once

#include <cstdint>

namespace coupler::kernels {

// Parses [-]digits[.digits] (at least one digit) from p; returns the first byte after it (end
// or the byte that stopped it), or nullptr when the text is not such a decimal or the value
// cannot be had exactly here.
inline const char* ScanPlainFloat(const char* p, const char* end, float& out) {
  static constexpr float kPow10f[] = {1e0f, 1e1f, 1e2f, 1e3f, 1e4f, 1e5f,
                                      1e6f, 1e7f, 1e8f, 1e9f, 1e10f};
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                      1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const bool negative = p < end && *p == '-';
  p += negative ? 1 : 0;
  uint64_t mantissa = 0;
  int digits = 0;
  int fraction = -1;  // digits after the point, -1 before one is seen
  for (; p < end; ++p) {
    const auto d = static_cast<uint64_t>(static_cast<unsigned char>(*p) - '0');
    if (d < 10) {
      if (++digits > 19) return nullptr;  // 19 digits still fit 64 bits
      mantissa = mantissa * 10 + d;
      fraction += fraction >= 0 ? 1 : 0;
    } else if (*p == '.' && fraction < 0) {
      fraction = 0;
    } else {
      break;
    }
  }
  const int scale = fraction < 0 ? 0 : fraction;
  if (digits == 0) return nullptr;
  float magnitude = 0;
  if (mantissa <= (1u << 24) && scale <= 10) {
    magnitude = static_cast<float>(mantissa) / kPow10f[scale];
  } else if (mantissa <= (uint64_t{1} << 53) && scale <= 22) {
    // Exact operands again, so the double quotient is within half a double ulp of the value.
    // Rounding it to float is then right unless it sits next to a float halfway point (the 29
    // bits below float's precision at 1 << 28, give or take one), where the value's side of
    // the halfway point is not known: those few go the general way.
    const double wide = static_cast<double>(mantissa) / kPow10[scale];
    uint64_t bits = 0;
    __builtin_memcpy(&bits, &wide, sizeof(bits));
    const uint64_t below = bits & ((uint64_t{1} << 29) - 1);
    const uint64_t half = uint64_t{1} << 28;
    if (below + 1 >= half && below <= half + 1) return nullptr;
    magnitude = static_cast<float>(wide);
  } else {
    return nullptr;
  }
  out = negative ? -magnitude : magnitude;
  return p;
}

// Parses [-]digits (1 to 9 of them, so always in int32 range) from p; returns the first byte
// after them, or nullptr.
inline const char* ScanPlainInt32(const char* p, const char* end, int32_t& out) {
  const bool negative = p < end && *p == '-';
  p += negative ? 1 : 0;
  int32_t value = 0;
  int digits = 0;
  for (; p < end; ++p) {
    const auto d = static_cast<uint32_t>(static_cast<unsigned char>(*p) - '0');
    if (d >= 10) break;
    if (++digits > 9) return nullptr;
    value = value * 10 + static_cast<int32_t>(d);
  }
  if (digits == 0) return nullptr;
  out = negative ? -value : value;
  return p;
}

// Parses [-]digits (1 to 18 of them, so always in int64 range and never its minimum, the
// missing value) from p; returns the first byte after them, or nullptr.
inline const char* ScanPlainInt64(const char* p, const char* end, int64_t& out) {
  const bool negative = p < end && *p == '-';
  p += negative ? 1 : 0;
  int64_t value = 0;
  int digits = 0;
  for (; p < end; ++p) {
    const auto d = static_cast<uint32_t>(static_cast<unsigned char>(*p) - '0');
    if (d >= 10) break;
    if (++digits > 18) return nullptr;
    value = value * 10 + static_cast<int64_t>(d);
  }
  if (digits == 0) return nullptr;
  out = negative ? -value : value;
  return p;
}

}  // namespace coupler::kernels
