// Logging on spdlog: one named logger per component ("coordinator", "worker", "planner", ...),
// all writing to stderr so stdout stays clean for machine-readable output.
#pragma once

#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>

#include "runtime/status.h"

namespace coupler {

// Every line's prefix: the UTC date and time to the millisecond, the level, the component.
inline constexpr std::string_view kLogLinePattern = "%^[%Y-%m-%dT%H:%M:%S.%eZ %l %n]%$ %v";

// The logger for a component, created on first use with the current global level.
std::shared_ptr<spdlog::logger> Logger(std::string_view component);

// Parses trace|debug|info|warn|error|off and applies it to every logger, present and future.
Status SetLogLevel(std::string_view level);

}  // namespace coupler
