// fp16/bf16 conversions: exhaustive fp16 round trips, the edge values users hit (max, overflow,
// subnormals, ties) and a sweep against a straightforward double-precision reference.
#include "runtime/precision/half.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

namespace coupler::precision {
namespace {

bool IsHalfNan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x03FFu) != 0; }
bool IsBf16Nan(uint16_t b) { return (b & 0x7F80u) == 0x7F80u && (b & 0x007Fu) != 0; }

// Reference: round |f| to a multiple of the target format's step at its exponent with
// nearbyint (ties to even in the default rounding mode), in double, where every step is exact.
// min_exponent is the smallest normal exponent, mantissa_bits the stored mantissa width.
double RoundToFormat(float f, int min_exponent, int mantissa_bits) {
  const double a = std::fabs(static_cast<double>(f));
  if (a == 0.0) return 0.0;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the unbiased exponent is e - 1
  const int step_exponent = std::max(e - 1, min_exponent) - mantissa_bits;
  return std::ldexp(std::nearbyint(std::ldexp(a, -step_exponent)), step_exponent);
}

uint16_t ReferenceHalfBits(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isinf(f)) return sign | 0x7C00;
  const double r = RoundToFormat(f, -14, 10);
  if (r > 65504.0) return sign | 0x7C00;
  if (r < 0x1p-14) return sign | static_cast<uint16_t>(std::ldexp(r, 24));  // subnormal steps
  int e = 0;
  const double m = std::frexp(r, &e);  // r = m * 2^e
  const auto mantissa = static_cast<uint16_t>(std::ldexp(m * 2.0 - 1.0, 10));
  return sign | static_cast<uint16_t>((e - 1 + 15) << 10) | mantissa;
}

uint16_t ReferenceBf16Bits(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isinf(f)) return sign | 0x7F80;
  const double r = RoundToFormat(f, -126, 7);
  if (r > 0x1.FEp127) return sign | 0x7F80;
  // r has at most 8 significant bits, so it is exact as a float and its top 16 bits are bf16.
  return sign | static_cast<uint16_t>(Float32Bits(static_cast<float>(r)) >> 16);
}

TEST(PrecisionHalfTest, EveryFp16PatternRoundTripsThroughFloat) {
  int nans = 0;
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    const auto h = static_cast<uint16_t>(i);
    const float f = HalfBitsToFloat(h);
    const uint16_t back = FloatToHalfBits(f);
    if (IsHalfNan(h)) {
      ++nans;
      ASSERT_TRUE(std::isnan(f)) << std::hex << i;
      ASSERT_NE(Float32Bits(f) & 0x00400000u, 0u) << "float NaN not quiet for " << std::hex << i;
      // Canonicalization only sets the quiet bit; sign and payload survive.
      ASSERT_EQ(back, h | 0x0200u) << std::hex << i;
    } else {
      ASSERT_EQ(back, h) << "fp16 0x" << std::hex << i << " -> " << f;
    }
  }
  EXPECT_EQ(nans, 2 * 1023);
}

TEST(PrecisionHalfTest, EveryBf16PatternRoundTripsThroughFloat) {
  for (uint32_t i = 0; i <= 0xFFFF; ++i) {
    const auto b = static_cast<uint16_t>(i);
    const float f = Bf16BitsToFloat(b);
    if (IsBf16Nan(b)) {
      ASSERT_TRUE(std::isnan(f));
      ASSERT_EQ(FloatToBf16Bits(f), b | 0x0040u) << std::hex << i;
    } else {
      ASSERT_EQ(Float32Bits(f), i << 16);
      ASSERT_EQ(FloatToBf16Bits(f), b) << std::hex << i;
    }
  }
}

TEST(PrecisionHalfTest, Fp16KnownValues) {
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalfBits(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalfBits(65519.996f), 0x7BFF);  // just under the tie stays finite
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7C00);    // the tie rounds to even: inf
  EXPECT_EQ(FloatToHalfBits(-1e6f), 0xFC00);
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(FloatToHalfBits(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(FloatToHalfBits(0x1p-14f), 0x0400);    // smallest normal
  EXPECT_EQ(FloatToHalfBits(0x1p-24f), 0x0001);    // smallest subnormal
  EXPECT_EQ(FloatToHalfBits(0x1p-25f), 0x0000);    // tie between 0 and 2^-24: even is 0
  EXPECT_EQ(FloatToHalfBits(0x1.000002p-25f), 0x0001);  // just above the tie
  EXPECT_EQ(FloatToHalfBits(0x1.8p-24f), 0x0002);  // 1.5 steps: tie, even is 2
  EXPECT_EQ(FloatToHalfBits(0x1.4p-23f), 0x0002);  // 2.5 steps: tie, even is 2
  EXPECT_EQ(FloatToHalfBits(-0x1p-26f), 0x8000);   // underflow keeps the sign
  EXPECT_EQ(FloatToHalfBits(0x1p-149f), 0x0000);   // fp32 subnormal
  EXPECT_EQ(FloatToHalfBits(0x1.FF8p-15f), 0x03FF);  // largest subnormal
  EXPECT_EQ(FloatToHalfBits(0x1.FFCp-15f), 0x0400);  // tie: even carries into the normals
  EXPECT_EQ(FloatToHalfBits(0x1.FFBFFEp-15f), 0x03FF);  // just below that tie
  EXPECT_EQ(FloatToHalfBits(0.1f), 0x2E66);
  EXPECT_EQ(FloatToHalfBits(1.0f + 0x1p-11f), 0x3C00);  // tie, even: down
  EXPECT_EQ(FloatToHalfBits(1.0f + 3 * 0x1p-11f), 0x3C02);  // tie, even: up

  EXPECT_EQ(HalfBitsToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(HalfBitsToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(HalfBitsToFloat(0x03FF), 0x1.FF8p-15f);
  EXPECT_EQ(HalfBitsToFloat(0x2E66), 0.0999755859375f);
  EXPECT_EQ(HalfBitsToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(Float32Bits(HalfBitsToFloat(0x8000)), 0x80000000u);
}

TEST(PrecisionHalfTest, NanStaysQuietNan) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const float snan = Float32FromBits(0x7F800001u);  // signaling, payload only in low bits
  const float neg_nan = Float32FromBits(0xFFC00000u);
  for (float f : {qnan, snan, neg_nan}) {
    EXPECT_TRUE(IsHalfNan(FloatToHalfBits(f)));
    EXPECT_NE(FloatToHalfBits(f) & 0x0200u, 0u);
    EXPECT_TRUE(IsBf16Nan(FloatToBf16Bits(f)));
    EXPECT_NE(FloatToBf16Bits(f) & 0x0040u, 0u);
  }
  EXPECT_EQ(FloatToHalfBits(neg_nan), 0xFE00);
  EXPECT_EQ(FloatToBf16Bits(neg_nan), 0xFFC0);
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(0x7C01)));
  EXPECT_TRUE(std::isnan(Bf16BitsToFloat(0x7F81)));
}

TEST(PrecisionHalfTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16Bits(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBf16Bits(0.1f), 0x3DCD);
  EXPECT_EQ(FloatToBf16Bits(Float32FromBits(0x3F808000u)), 0x3F80);  // tie, even: down
  EXPECT_EQ(FloatToBf16Bits(Float32FromBits(0x3F818000u)), 0x3F82);  // tie, even: up
  EXPECT_EQ(FloatToBf16Bits(Float32FromBits(0x3F808001u)), 0x3F81);  // above the tie
  EXPECT_EQ(FloatToBf16Bits(Float32FromBits(0x3F807FFFu)), 0x3F80);  // below the tie
  EXPECT_EQ(FloatToBf16Bits(std::numeric_limits<float>::max()), 0x7F80);  // rounds to inf
  EXPECT_EQ(FloatToBf16Bits(Float32FromBits(0x7F7F7FFFu)), 0x7F7F);  // largest finite stays
  EXPECT_EQ(FloatToBf16Bits(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(FloatToBf16Bits(0x1p-149f), 0x0000);  // smallest fp32 subnormal: tie below, to 0
  EXPECT_EQ(FloatToBf16Bits(0x1p-133f), 0x0001);  // smallest bf16 subnormal
  EXPECT_EQ(FloatToBf16Bits(0x1p-126f), 0x0080);  // smallest normal: same exponent as fp32
  EXPECT_EQ(Bf16BitsToFloat(0x0001), 0x1p-133f);
}

TEST(PrecisionHalfTest, GenericFormatHelpersDispatch) {
  EXPECT_EQ(EncodeHalf(0.1f, ElementType::kFloat16), 0x2E66);
  EXPECT_EQ(EncodeHalf(0.1f, ElementType::kBFloat16), 0x3DCD);
  EXPECT_EQ(DecodeHalf(0x3C00, ElementType::kFloat16), 1.0f);
  EXPECT_EQ(DecodeHalf(0x3F80, ElementType::kBFloat16), 1.0f);
  EXPECT_STREQ(HalfFormatName(ElementType::kBFloat16), "bf16");
}

// Every float would take too long for a unit test; a prime stride over all bit patterns plus
// dense windows around each fp16 boundary covers every exponent and rounding situation.
TEST(PrecisionHalfTest, MatchesDoubleReferenceAcrossFloats) {
  auto check = [](uint32_t bits) {
    const float f = Float32FromBits(bits);
    if (std::isnan(f)) return;
    ASSERT_EQ(FloatToHalfBits(f), ReferenceHalfBits(f)) << std::hexfloat << f;
    ASSERT_EQ(FloatToBf16Bits(f), ReferenceBf16Bits(f)) << std::hexfloat << f;
  };
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 1021) check(static_cast<uint32_t>(bits));
  for (uint32_t center : {0x33000000u, 0x33800000u, 0x38800000u, 0x387FE000u, 0x477FE000u,
                          0x477FF000u, 0x3F800000u, 0x7F7F8000u, 0x00800000u, 0x03000000u}) {
    for (uint32_t d = 0; d < 20000; ++d) {
      check(center + d);
      check(center - d);
      check((center + d) | 0x80000000u);
    }
  }
}

}  // namespace
}  // namespace coupler::precision
