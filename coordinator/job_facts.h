// JobFacts: what people are told about a job beside its tasks' states — when it was submitted
// and when it finished, by whom, which devices ran its commits, where its gangs ran. Nothing
// the scheduler decides reads them (JobState keeps those: the tasks' states, attempts, queues);
// status, the page, retention and the store do.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace coupler::coordinator {

struct JobFacts {
  // Wall clock, ms since the Unix epoch; finished_ms is 0 while the job runs.
  int64_t submitted_ms = 0;
  int64_t finished_ms = 0;
  // The client key that submitted it: with an admin key, the only one that may cancel it.
  std::string submitted_by;
  // Where committed tasks ran ("cpu", "cuda:0", ...), counted, for "which device ran what";
  // and how many asked for a GPU and ran on the CPU.
  std::map<std::string, uint64_t> devices;
  uint64_t gpu_fallbacks = 0;
  // By gang task: the hosts (addresses) its latest attempt was placed on, leader first.
  std::map<uint64_t, std::vector<std::string>> gang_hosts;

  void CountDevice(const std::string& device, bool gpu_fallback) {
    ++devices[device];
    gpu_fallbacks += gpu_fallback ? 1 : 0;
  }
  std::vector<std::string> GangHosts(uint64_t task) const {
    auto it = gang_hosts.find(task);
    return it == gang_hosts.end() ? std::vector<std::string>{} : it->second;
  }
};

}  // namespace coupler::coordinator
