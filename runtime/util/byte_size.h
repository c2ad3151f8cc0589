// Byte sizes as people write them in configs and flags ("512MiB", "1.5GB") and as coupler prints
// them back. Many parts use these for unrelated reasons (memory limits, GPU shares, error
// messages), so they live here rather than with any one of them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "runtime/status.h"

namespace coupler::util {

// "512MiB", "2GiB", "1.5GB", "4096", "64KiB" -> bytes (KiB/MiB/GiB/TiB = 1024^n, KB/MB/GB/TB =
// 1000^n, k/M/G/T or Ki/Mi/Gi/Ti alone = 1024^n, no suffix or B = bytes). Units are
// case-insensitive and may follow the number after whitespace; a fractional result is floored
// ("1.5B" -> 1). InvalidArgument naming the text for empty, negative, malformed or overflowing
// input.
Result<size_t> ParseByteSize(std::string_view text);

// 536870912 -> "512.0 MiB", 1536 -> "1.5 KiB", 17 -> "17 B" (one decimal from KiB up).
std::string FormatBytes(size_t bytes);

}  // namespace coupler::util
