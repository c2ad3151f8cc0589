#include "worker/host_info.h"

#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace coupler::worker {
namespace {

uint64_t MeminfoKiB(const std::string& text, const std::string& key) {
  auto at = text.find(key + ":");
  if (at == std::string::npos) return 0;
  return std::stoull(text.substr(at + key.size() + 1));
}

}  // namespace

HostInfo ProbeHost() {
  HostInfo h;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    h.cpus = CPU_COUNT(&set);
  } else {
    h.cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  std::ifstream in("/proc/meminfo");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  h.memory_bytes = MeminfoKiB(text, "MemTotal") * 1024;
  h.available_bytes = MeminfoKiB(text, "MemAvailable") * 1024;
  h.pid = static_cast<int>(getpid());
  return h;
}

}  // namespace coupler::worker
