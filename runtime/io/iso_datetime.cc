#include "runtime/io/iso_datetime.h"

namespace coupler::io {
namespace {

// Reads exactly `n` digits at text[pos] into `out`; false when one is not a digit.
bool Digits(std::string_view text, size_t pos, size_t n, int64_t& out) {
  if (pos + n > text.size()) return false;
  int64_t value = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto d = static_cast<unsigned>(static_cast<unsigned char>(text[pos + i]) - '0');
    if (d >= 10) return false;
    value = value * 10 + d;
  }
  out = value;
  return true;
}

// Days from 1970-01-01 to year-month-day in the proleptic Gregorian calendar (Howard Hinnant's
// days_from_civil).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool LeapYear(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int64_t DaysInMonth(int64_t y, int64_t m) {
  static constexpr int64_t kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && LeapYear(y) ? 29 : kDays[m - 1];
}

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

}  // namespace

bool ParseIsoDatetime(std::string_view raw, int64_t& nanoseconds) {
  const std::string_view s = Trimmed(raw);
  int64_t year = 0, month = 0, day = 0;
  if (s.size() < 10 || !Digits(s, 0, 4, year) || s[4] != '-' || !Digits(s, 5, 2, month) ||
      s[7] != '-' || !Digits(s, 8, 2, day)) {
    return false;
  }
  if (year < 1678 || year > 2261 || month < 1 || month > 12 || day < 1 ||
      day > DaysInMonth(year, month)) {
    return false;
  }
  int64_t hour = 0, minute = 0, second = 0, fraction_ns = 0, offset_minutes = 0;
  size_t pos = 10;
  if (pos < s.size() && (s[pos] == 'T' || s[pos] == ' ')) {
    if (!Digits(s, pos + 1, 2, hour) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, minute)) {
      return false;
    }
    pos += 6;
    if (pos < s.size() && s[pos] == ':') {
      if (!Digits(s, pos + 1, 2, second)) return false;
      pos += 3;
      if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
        ++pos;
        size_t n = 0;
        int64_t scale = 100'000'000;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
          if (++n > 9) return false;  // finer than a nanosecond: not exact, refused
          fraction_ns += (s[pos] - '0') * scale;
          scale /= 10;
          ++pos;
        }
        if (n == 0) return false;
      }
    }
    if (hour > 23 || minute > 59 || second > 59) return false;  // no leap seconds, as numpy
    if (pos < s.size()) {
      if (s[pos] == 'Z') {
        ++pos;
      } else if (s[pos] == '+' || s[pos] == '-') {
        const int64_t sign = s[pos] == '-' ? -1 : 1;
        int64_t oh = 0, om = 0;
        if (!Digits(s, pos + 1, 2, oh)) return false;
        pos += 3;
        if (pos < s.size() && s[pos] == ':') {
          if (!Digits(s, pos + 1, 2, om)) return false;
          pos += 3;
        } else if (pos + 2 <= s.size() && Digits(s, pos, 2, om)) {
          pos += 2;
        }
        if (oh > 23 || om > 59) return false;
        offset_minutes = sign * (oh * 60 + om);
      }
    }
  }
  if (pos != s.size()) return false;
  const int64_t days = DaysFromCivil(year, month, day);
  const int64_t seconds = days * 86400 + hour * 3600 + (minute - offset_minutes) * 60 + second;
  // 1678..2261 keeps seconds * 1e9 inside int64 except at the extreme edges; check exactly.
  int64_t ns = 0;
  if (__builtin_mul_overflow(seconds, int64_t{1'000'000'000}, &ns) ||
      __builtin_add_overflow(ns, fraction_ns, &ns)) {
    return false;
  }
  if (ns == INT64_MIN) return false;  // NaT, the missing value
  nanoseconds = ns;
  return true;
}

}  // namespace coupler::io
