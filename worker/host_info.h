// HostInfo: what this machine offers a worker — host name, CPUs, memory — read from the OS, so
// a worker can announce its capacity and `coupler doctor` can show it.
#pragma once

#include <cstdint>
#include <string>

namespace coupler::worker {

struct HostInfo {
  std::string hostname;
  int cpus = 1;                 // CPUs this process may run on (affinity), not the whole box
  uint64_t memory_bytes = 0;    // MemTotal
  uint64_t available_bytes = 0; // MemAvailable
  int pid = 0;
};

HostInfo ProbeHost();

}  // namespace coupler::worker
