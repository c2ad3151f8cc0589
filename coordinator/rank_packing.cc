#include "coordinator/rank_packing.h"

#include <algorithm>

namespace coupler::coordinator {

std::vector<std::pair<std::string, uint32_t>> PackRanks(std::vector<RankCandidate> candidates,
                                                        uint32_t ranks) {
  std::sort(candidates.begin(), candidates.end(), [](const RankCandidate& a, const RankCandidate& b) {
    if (a.room != b.room) return a.room > b.room;
    if (a.held != b.held) return a.held > b.held;
    if (a.fast_interconnect != b.fast_interconnect) return a.fast_interconnect;
    return a.id < b.id;
  });
  std::vector<std::pair<std::string, uint32_t>> out;
  uint32_t left = ranks;
  for (const RankCandidate& c : candidates) {
    const uint32_t take = std::min(left, c.room);
    if (take == 0) continue;
    left -= take;
    out.emplace_back(c.id, take);
  }
  return out;
}

}  // namespace coupler::coordinator
