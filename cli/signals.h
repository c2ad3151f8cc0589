// SIGTERM/SIGINT → a flag the long-running commands poll, so they stop (or drain) cleanly.
#pragma once

#include <atomic>

namespace coupler::cli {

// Installs the handlers once and returns the flag they set.
const std::atomic<bool>& StopRequested();

}  // namespace coupler::cli
