// Durations as operators write them on a command line: "90s", "30m", "12h", "7d", or a bare
// number of seconds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::util {

// Milliseconds; InvalidArgument naming `flag` and the accepted forms otherwise.
Result<int64_t> ParseDuration(std::string_view text, std::string_view flag);

}  // namespace coupler::util
