// How a gang's ranks are spread over workers: onto as few hosts as possible, so most ranks talk
// over shared memory or one node's interconnect. Hosts are addresses: several workers on one
// address are one host, and are filled together. Shared by the gang reservations (on free slots) and
// `coupler plan --workers` (on the pool's slots), so the preview packs as the scheduler does.
#pragma once

#include <cstdint>
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
};

// The workers and the ranks each runs, leader (the one running the most) first. Hosts with the
// largest room (summed over their workers) come first, so `ranks` is covered by the fewest
// hosts, and within a host the largest worker first. Takes what there is: the caller checks
// that the rooms add up to `ranks`.
std::vector<std::pair<std::string, uint32_t>> PackRanks(std::vector<RankCandidate> candidates,
                                                        uint32_t ranks);

}  // namespace coupler::coordinator
