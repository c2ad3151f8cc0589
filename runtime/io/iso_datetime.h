// ISO 8601 timestamps as import_csv reads them into datetime64[ns] columns: int64 nanoseconds
// since 1970-01-01T00:00:00 UTC, numpy's and pandas' representation, so a shard's timestamps are
// what pd.to_datetime gives for the same text. Pure; no locale, no time zone database.
#pragma once

#include <cstdint>
#include <string_view>

namespace coupler::io {

// Accepted spellings (blanks and one pair of quotes around are ignored):
//   YYYY-MM-DD
//   YYYY-MM-DD[T| ]HH:MM[:SS[.f...]] with 1 to 9 fraction digits
// optionally followed by Z or an offset ±HH:MM, ±HHMM or ±HH, which is subtracted (the result
// is UTC); without one the wall time is taken as UTC, as pandas does for naive timestamps.
// Years 1678..2261 (int64 nanoseconds' range, as pandas'). False for anything else, including
// impossible dates (2023-02-29) and times (24:00, 12:60).
bool ParseIsoDatetime(std::string_view text, int64_t& nanoseconds);

}  // namespace coupler::io
