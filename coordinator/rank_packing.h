// How a gang's ranks are spread over workers: onto as few as possible, so most ranks talk over
// shared memory or one node's interconnect. Shared by the gang reservations (on free slots) and
// `coupler plan --workers` (on the pool's slots), so the preview packs as the scheduler does.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace coupler::coordinator {

struct RankCandidate {
  std::string id;
  uint32_t room = 0;  // ranks it could run
  uint32_t held = 0;  // of those, slots the gang already holds there: preferred on a tie
  bool fast_interconnect = false;  // labelled interconnect=nvlink|infiniband: next on a tie
};

// The workers and the ranks each runs, leader (the one running the most) first; the largest
// room first covers `ranks` with the fewest workers. Takes what there is: the caller checks
// that the rooms add up to `ranks`.
std::vector<std::pair<std::string, uint32_t>> PackRanks(std::vector<RankCandidate> candidates,
                                                        uint32_t ranks);

}  // namespace coupler::coordinator
