// Decimal numbers zero-padded to a width, as printf's "%0*lld" writes them, appended to a
// string: the names of shard files and task logs are made for every task dispatched and run,
// and snprintf (its format parsed every time) was a tenth of a worker's time on short tasks.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>

namespace coupler::util {

// Appends `v` in decimal, zero-padded to `width` characters; a negative number's sign counts
// in the width ("-0001" for -1 in 5), and a number wider than `width` is written whole.
inline void AppendZeroPadded(std::string& out, int64_t v, int width) {
  char digits[24];
  const bool negative = v < 0;
  // The magnitude as unsigned: -INT64_MIN does not fit an int64_t.
  const uint64_t magnitude = negative ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const std::to_chars_result r = std::to_chars(digits, digits + sizeof(digits), magnitude);
  const int n = static_cast<int>(r.ptr - digits);
  if (negative) out += '-';
  const int pad = width - n - (negative ? 1 : 0);
  if (pad > 0) out.append(static_cast<size_t>(pad), '0');
  out.append(digits, static_cast<size_t>(n));
}

}  // namespace coupler::util
