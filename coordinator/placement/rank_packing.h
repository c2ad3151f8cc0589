// How a gang's ranks are spread over workers: onto as few hosts as possible, so most ranks talk
// over shared memory or one node's interconnect. Hosts are addresses: several workers on one
// address are one host, and are filled together. Shared by the gang reservations (on free slots) and
// `coupler plan --workers` (on the pool's slots), so the preview packs as the scheduler does.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace coupler::coordinator {

struct RankCandidate {
  std::string id;
  std::string host;   // its address; empty: a host of its own
  uint32_t room = 0;  // ranks it could run
  uint32_t held = 0;  // of those, slots the gang already holds there: preferred on a tie
  bool fast_interconnect = false;  // labelled interconnect=nvlink|infiniband: next on a tie
  // How much hotter or more throttled its GPUs run (GpuPreference: 0 cool): cooler hosts next.
  uint8_t gpu_preference = 0;
};

// A worker as a place for a gang's ranks: where it is and what launch context it shares.
struct GangSeat {
  std::string id;
  std::string address;     // its host
  std::string allocation;  // the Slurm job it runs in; empty: none (the machine itself)
  uint32_t slots = 0;      // GangSlots: the ranks it could ever run
};

// The workers one gang may use. All of a gang's ranks on one host start under one launch there
// (one MPI daemon, or one step of one Slurm job), so inside one allocation: on an address whose
// workers sit in different Slurm jobs, only those of one job take ranks — the job with the most
// slots there, then the lowest id, so the choice holds from one pass to the next. Without this,
// two 1-CPU array jobs on one node took a 2-rank gang and both ranks ran in one job's CPU.
std::set<std::string> OneAllocationPerHost(const std::vector<GangSeat>& seats);

// The workers and the ranks each runs, leader (the one running the most) first. Hosts with the
// largest room (summed over their workers) come first, so `ranks` is covered by the fewest
// hosts, and within a host the largest worker first. Takes what there is: the caller checks
// that the rooms add up to `ranks`.
std::vector<std::pair<std::string, uint32_t>> PackRanks(std::vector<RankCandidate> candidates,
                                                        uint32_t ranks);

}  // namespace coupler::coordinator
