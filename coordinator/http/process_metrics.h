// The coordinator process as the kernel counts it (/proc/self), read at each scrape: what the
// `process_*` series every Prometheus client library exports show, under the same names, so
// stock boards and alerts (memory growth, fd exhaustion) work on coupler unchanged.
#pragma once

#include <cstdint>
#include <optional>

namespace coupler::coordinator::http {

struct ProcessStats {
  double cpu_seconds = 0;  // user + system
  uint64_t resident_bytes = 0;
  uint64_t virtual_bytes = 0;
  uint64_t open_fds = 0;
  uint64_t max_fds = 0;
  double start_time_seconds = 0;  // Unix epoch
  uint64_t threads = 0;
};

// Nullopt where /proc cannot be read (then no process series are served).
std::optional<ProcessStats> ReadProcessStats();

}  // namespace coupler::coordinator::http
