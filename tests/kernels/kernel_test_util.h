// Shared by the kernel tests: seeded columns that mix every float class (NaN, inf, subnormal,
// exact fp16/bf16 ties, overflow), poison values that no kernel can produce, and bit-exact
// comparisons that point at the first differing element.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/precision/half.h"
#include "runtime/status.h"

namespace coupler::kernels {

// Signaling NaNs: clip only passes NaNs through from its input (which never holds these bits)
// and cast only emits quiet NaNs, so an output element still holding one was never written.
inline constexpr uint32_t kPoisonFloatBits = 0x7FBADBADu;
inline constexpr uint16_t kPoisonFp16Bits = 0x7D5Au;
inline constexpr uint16_t kPoisonBf16Bits = 0x7F85u;

#define COUPLER_ASSERT_OK(expr)                           \
  do {                                                    \
    const ::coupler::Status assert_ok_status_ = (expr);   \
    ASSERT_TRUE(assert_ok_status_.ok()) << assert_ok_status_.ToString(); \
  } while (0)

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  float Uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(Next() >> 40) * 0x1p-24f;
  }

 private:
  uint64_t state_;
};

inline std::vector<float> RandomColumn(size_t n, uint64_t seed) {
  using precision::Float32Bits;
  using precision::Float32FromBits;
  static constexpr float kSpecials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 65504.0f,
                                        65520.0f, 0x1p-24f, 0x1p-25f, 0x1p-14f, 3.4e38f,
                                        0x1p-149f, -1.5f, 2.25f};
  SplitMix64 rng(seed);
  std::vector<float> column(n);
  for (float& v : column) {
    const uint64_t r = rng.Next();
    const auto low = static_cast<uint32_t>(r);
    switch (r >> 61) {
      case 0: v = Float32FromBits(low); break;  // anything, NaN payloads included
      case 1: v = std::ldexp(rng.Uniform(1.0f, 2.0f), static_cast<int>(low % 48) - 30) *
                  ((low & 0x80000000u) != 0 ? -1.0f : 1.0f);
        break;  // fp16 subnormals through fp16 overflow
      case 2:
      case 3: v = rng.Uniform(-4.0f, 4.0f); break;
      case 4:  // exactly halfway between two fp16 values (normal range): the RNE ties
        v = Float32FromBits(Float32Bits(precision::HalfBitsToFloat(
                                static_cast<uint16_t>(low % 0x7BFFu))) + 0x1000u);
        break;
      case 5: v = Float32FromBits((low & 0xFFFF0000u) | 0x8000u); break;  // bf16 ties
      case 6: v = kSpecials[low % std::size(kSpecials)]; break;
      default: v = rng.Uniform(-70000.0f, 70000.0f); break;
    }
    if (Float32Bits(v) == kPoisonFloatBits) v = 1.0f;
  }
  return column;
}

inline void Poison(std::span<float> out) {
  for (float& v : out) v = precision::Float32FromBits(kPoisonFloatBits);
}
inline void Poison(std::span<uint16_t> out, uint16_t bits) {
  for (uint16_t& v : out) v = bits;
}

inline uint32_t BitsOf(float v) { return precision::Float32Bits(v); }
inline uint32_t BitsOf(uint16_t v) { return v; }
inline uint64_t BitsOf(double v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

inline std::string Hex(uint32_t bits) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "0x%08X", bits);
  return buffer;
}
inline std::string Hex(uint64_t bits) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%016llX", static_cast<unsigned long long>(bits));
  return buffer;
}

// Bit-exact equality (so NaN == NaN and -0 != +0), naming the first mismatch.
template <typename T>
::testing::AssertionResult SameBits(std::span<const T> expected, std::span<const T> actual) {
  if (expected.size() != actual.size()) {
    return ::testing::AssertionFailure() << "sizes differ: " << expected.size() << " vs "
                                         << actual.size();
  }
  size_t mismatches = 0;
  size_t first = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (BitsOf(expected[i]) != BitsOf(actual[i]) && mismatches++ == 0) first = i;
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << mismatches << " of " << expected.size() << " elements differ; first at " << first
         << ": expected " << Hex(BitsOf(expected[first])) << ", got "
         << Hex(BitsOf(actual[first]));
}

// No element still holds the poison, i.e. every output element was written.
template <typename T>
::testing::AssertionResult AllWritten(std::span<const T> out, uint32_t poison_bits) {
  for (size_t i = 0; i < out.size(); ++i) {
    if (BitsOf(out[i]) == poison_bits) {
      return ::testing::AssertionFailure() << "element " << i << " of " << out.size()
                                           << " was never written";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace coupler::kernels
