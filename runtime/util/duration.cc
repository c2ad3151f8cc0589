#include "runtime/util/duration.h"

#include <charconv>

namespace coupler::util {

Result<int64_t> ParseDuration(std::string_view text, std::string_view flag) {
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  const std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  int64_t scale = 0;
  if (unit.empty() || unit == "s") scale = 1000;
  if (unit == "m") scale = 60'000;
  if (unit == "h") scale = 3'600'000;
  if (unit == "d") scale = 86'400'000;
  // A year of milliseconds fits many times over; past 10^6 days is a typo.
  if (ec != std::errc() || end == text.data() || n < 0 || scale == 0 || n > 86'400'000'000) {
    return InvalidArgument(std::string(flag) + " '" + std::string(text) +
                           "': a duration such as 90s, 30m, 12h or 7d");
  }
  return n * scale;
}

}  // namespace coupler::util
