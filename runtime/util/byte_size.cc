#include "runtime/util/byte_size.h"

#include <cctype>
#include <cstdio>
#include <limits>
#include <string>

namespace coupler::util {
namespace {

bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A unit is a base (1000 or 1024) raised to a power; kept apart rather than as one number so
// that fractions can be scaled one small factor at a time without overflowing (see below).
struct Unit {
  size_t base = 1;
  int power = 0;
};

// "", "b" -> bytes; "k", "ki", "kib" -> 1024; "kb" -> 1000; likewise m, g, t.
bool ParseUnit(const std::string& unit, Unit* out) {
  if (unit.empty() || unit == "b") {
    *out = Unit{1, 0};
    return true;
  }
  static constexpr std::string_view kPrefixes = "kmgt";
  const size_t prefix = kPrefixes.find(unit[0]);
  if (prefix == std::string_view::npos) return false;
  const std::string_view rest = std::string_view(unit).substr(1);
  const int power = static_cast<int>(prefix) + 1;
  if (rest.empty() || rest == "i" || rest == "ib") {
    *out = Unit{1024, power};
    return true;
  }
  if (rest == "b") {
    *out = Unit{1000, power};
    return true;
  }
  return false;
}

Status BadSize(std::string_view text, std::string_view why) {
  return InvalidArgument("invalid byte size \"" + std::string(text) + "\": " + std::string(why) +
                         " (expected a number and an optional unit, e.g. 512MiB, 2GiB, 1.5GB, "
                         "64k or 4096)");
}

}  // namespace

Result<size_t> ParseByteSize(std::string_view text) {
  constexpr size_t kMax = std::numeric_limits<size_t>::max();
  // Fraction digits are kept as numerator / 10^digits; 15 digits keeps numerator x 1024 below
  // 2^64 in the exact scaling below, and nobody writes a memory limit more precisely.
  constexpr size_t kMaxFractionDigits = 15;

  const std::string_view s = Trim(text);
  if (s.empty()) return BadSize(text, "empty");
  size_t pos = 0;
  if (!IsDigit(s[0])) {
    return BadSize(text, s[0] == '-' ? "negative" : "does not start with a digit");
  }

  size_t whole = 0;
  for (; pos < s.size() && IsDigit(s[pos]); ++pos) {
    const size_t digit = static_cast<size_t>(s[pos] - '0');
    if (whole > (kMax - digit) / 10) return BadSize(text, "too large");
    whole = whole * 10 + digit;
  }
  size_t numerator = 0;
  size_t denominator = 1;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    const size_t first = pos;
    for (; pos < s.size() && IsDigit(s[pos]); ++pos) {
      if (pos - first == kMaxFractionDigits) return BadSize(text, "too many decimal places");
      numerator = numerator * 10 + static_cast<size_t>(s[pos] - '0');
      denominator *= 10;
    }
    if (pos == first) return BadSize(text, "no digits after the decimal point");
  }
  while (pos < s.size() && IsSpace(s[pos])) ++pos;

  Unit unit;
  if (!ParseUnit(Lower(s.substr(pos)), &unit)) {
    return BadSize(text, "unknown unit \"" + std::string(s.substr(pos)) + "\"");
  }

  // whole x base^power, checked one factor at a time.
  size_t result = whole;
  for (int i = 0; i < unit.power; ++i) {
    if (result > kMax / unit.base) return BadSize(text, "too large");
    result *= unit.base;
  }
  // floor(numerator / denominator x base^power) exactly: carry quotient and remainder through
  // each factor, so "1.1GB" is 1100000000 and not one byte less from binary rounding.
  size_t quotient = 0;
  size_t remainder = numerator;  // value = quotient + remainder / denominator
  for (int i = 0; i < unit.power; ++i) {
    const size_t scaled = remainder * unit.base;
    quotient = quotient * unit.base + scaled / denominator;
    remainder = scaled % denominator;
  }
  if (result > kMax - quotient) return BadSize(text, "too large");
  return result + quotient;
}

std::string FormatBytes(size_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr size_t kUnitCount = sizeof(kUnits) / sizeof(kUnits[0]);
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  // Move up while the value would print as 1024.0 or more, so 1048575 B reads "1.0 MiB".
  while (value >= 1023.95 && unit + 1 < kUnitCount) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f %s", value, kUnits[unit]);
  return buf;
}

}  // namespace coupler::util
