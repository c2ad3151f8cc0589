// JobFacts: what people are told about a job beside its tasks' states — when it was submitted
// and when it finished, by whom, which devices ran its commits, where its gangs ran, which
// nodes' outputs came from an earlier run. Nothing
// the scheduler decides reads them (JobState keeps those: the tasks' states, attempts, queues);
// status, the page, retention and the store (and the reuse index) do.
#pragma once

#include <cstddef>
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
  // Reuse (reuse_index.h), per plan node: its key (none when not computed), what a later
  // --reuse finds its outputs under; and the run directory its outputs came from when they
  // were reused (empty: it ran). Empty vectors once the job is compacted.
  std::vector<std::string> node_keys;
  std::vector<std::string> reused_runs;

  void CountDevice(const std::string& device, bool gpu_fallback) {
    ++devices[device];
    gpu_fallbacks += gpu_fallback ? 1 : 0;
  }
  const std::string& node_key(size_t plan_node) const {
    return plan_node < node_keys.size() ? node_keys[plan_node] : None();
  }
  bool node_reused(size_t plan_node) const { return !reused_from(plan_node).empty(); }
  const std::string& reused_from(size_t plan_node) const {
    return plan_node < reused_runs.size() ? reused_runs[plan_node] : None();
  }
  std::vector<std::string> GangHosts(uint64_t task) const {
    auto it = gang_hosts.find(task);
    return it == gang_hosts.end() ? std::vector<std::string>{} : it->second;
  }

 private:
  static const std::string& None() {
    static const std::string kNone;
    return kNone;
  }
};

}  // namespace coupler::coordinator
