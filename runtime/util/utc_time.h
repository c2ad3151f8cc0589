// A moment as people read it in coupler's output and state: ISO 8601 in UTC, to the second
// ("2026-12-06T18:40:00Z"), whatever the host's time zone.
#pragma once

#include <cstdint>
#include <string>

namespace coupler::util {

std::string Iso8601Utc(int64_t unix_ms);

}  // namespace coupler::util
