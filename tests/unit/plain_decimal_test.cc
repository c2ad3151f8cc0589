// The CSV kernel's plain-decimal fast path must give exactly the float std::from_chars gives,
// or step aside: checked on the values exports write, on random mantissas and scales, and on
// the rounding ties where a double quotient cannot say which way to round.
#include "kernels/cpu/plain_decimal.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace coupler::kernels {
namespace {

uint32_t Bits(float v) {
  uint32_t b = 0;
  std::memcpy(&b, &v, sizeof(b));
  return b;
}

// The fast path's answer, checked against from_chars; false when it stepped aside.
bool FastMatchesFromChars(const std::string& text) {
  const char* end = text.data() + text.size();
  float fast = 0;
  const char* stop = ScanPlainFloat(text.data(), end, fast);
  if (stop == nullptr) return false;
  float slow = 0;
  const auto r = std::from_chars(text.data(), end, slow);
  EXPECT_EQ(r.ec, std::errc()) << text;
  EXPECT_EQ(stop, end) << text;
  EXPECT_EQ(Bits(fast), Bits(slow)) << text << ": " << fast << " vs " << slow;
  return true;
}

TEST(PlainDecimalTest, ExportSpellingsAreExact) {
  for (const char* text : {"0", "-0", "1.", ".5", "0.1", "-12.3456", "3.4028", "16777216",
                           "0.0000001", "123456.789", "-999.99899", "5.1234"}) {
    EXPECT_TRUE(FastMatchesFromChars(text)) << text;
  }
  const std::string zero = "-0";
  float v = 0;
  ASSERT_NE(ScanPlainFloat(zero.data(), zero.data() + zero.size(), v), nullptr);
  EXPECT_TRUE(std::signbit(v));
}

TEST(PlainDecimalTest, StopsAtTheFieldEnd) {
  const std::string line = "-1.25,7";
  float v = 0;
  const char* stop = ScanPlainFloat(line.data(), line.data() + line.size(), v);
  ASSERT_NE(stop, nullptr);
  EXPECT_EQ(*stop, ',');
  EXPECT_EQ(v, -1.25f);
  int32_t i = 0;
  const char* last = ScanPlainInt32(stop + 1, line.data() + line.size(), i);
  EXPECT_EQ(last, line.data() + line.size());
  EXPECT_EQ(i, 7);
}

TEST(PlainDecimalTest, OtherSpellingsStepAside) {
  // Each goes the general way (from_chars, the dialect's blanks and NA tokens, errors).
  for (const char* text : {"", "-", ".", "+1.5", "1e5", "NA", "nan", "inf", "12345678901234567890",
                           "0.00000000000000000000001"}) {
    float v = 0;
    const char* end = text + std::strlen(text);
    const char* stop = ScanPlainFloat(text, end, v);
    EXPECT_TRUE(stop == nullptr || stop != end) << text;
  }
  int32_t i = 0;
  for (const char* text : {"", "-", "1234567890", "+3"}) {
    const char* end = text + std::strlen(text);
    const char* stop = ScanPlainInt32(text, end, i);
    EXPECT_TRUE(stop == nullptr || stop != end) << text;
  }
}

TEST(PlainDecimalTest, RoundingTiesAreLeftToFromChars) {
  // 2^24 + 1 lies exactly halfway between two floats: the double quotient is the tie itself,
  // whose side a rounded double cannot tell, so the fast path must not answer.
  float v = 0;
  const std::string tie = "16777217";
  EXPECT_EQ(ScanPlainFloat(tie.data(), tie.data() + tie.size(), v), nullptr);
  const std::string above = "16777217.000001";  // 15 digits: just above the tie
  if (ScanPlainFloat(above.data(), above.data() + above.size(), v) != nullptr) {
    EXPECT_EQ(v, 16777218.0f);
  }
}

TEST(PlainDecimalTest, RandomDecimalsAreExactOrStepAside) {
  std::mt19937_64 rng(11);
  int fast = 0;
  constexpr int kCases = 300000;
  for (int n = 0; n < kCases; ++n) {
    const uint64_t mantissa = rng() >> (rng() % 64);
    const int scale = static_cast<int>(rng() % 14);
    std::string text = std::to_string(mantissa);
    if (scale > 0) {
      while (static_cast<int>(text.size()) <= scale) text.insert(0, "0");
      text.insert(text.size() - static_cast<size_t>(scale), ".");
    }
    if (rng() % 2 == 0) text.insert(0, "-");
    fast += FastMatchesFromChars(text) ? 1 : 0;
  }
  EXPECT_GT(fast, kCases / 2);  // the fast path does take most of them
}

}  // namespace
}  // namespace coupler::kernels
