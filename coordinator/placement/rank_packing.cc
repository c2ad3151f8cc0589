#include "coordinator/placement/rank_packing.h"

#include <algorithm>
#include <map>

namespace coupler::coordinator {

std::set<std::string> OneAllocationPerHost(const std::vector<GangSeat>& seats) {
  // Per address, the slots of each allocation there.
  std::map<std::string, std::map<std::string, uint64_t>> slots;
  for (const GangSeat& s : seats) slots[s.address][s.allocation] += s.slots;
  std::map<std::string, std::string> chosen;  // address -> allocation
  for (const auto& [address, allocations] : slots) {
    const auto best = std::max_element(allocations.begin(), allocations.end(),
                                       [](const auto& a, const auto& b) {
                                         // Most slots; on a tie the lowest id (map order).
                                         return a.second < b.second;
                                       });
    chosen[address] = best->first;
  }
  std::set<std::string> out;
  for (const GangSeat& s : seats) {
    // A worker without an address is a host of its own, whatever its allocation.
    if (s.address.empty() || chosen[s.address] == s.allocation) out.insert(s.id);
  }
  return out;
}

std::vector<std::pair<std::string, uint32_t>> PackRanks(std::vector<RankCandidate> candidates,
                                                        uint32_t ranks) {
  // A host is judged by what all its workers could run together; a worker without an
  // address is a host of its own.
  struct Host {
    uint64_t room = 0, held = 0;
    bool fast = false;
    uint8_t gpu_preference = 0;  // its worst worker's
  };
  auto host_of = [](const RankCandidate& c) { return c.host.empty() ? "\x01" + c.id : c.host; };
  std::map<std::string, Host> hosts;
  for (const RankCandidate& c : candidates) {
    Host& h = hosts[host_of(c)];
    h.room += c.room;
    h.held += c.held;
    h.fast |= c.fast_interconnect;
    h.gpu_preference = std::max(h.gpu_preference, c.gpu_preference);
  }
  std::sort(candidates.begin(), candidates.end(), [&](const RankCandidate& a, const RankCandidate& b) {
    const std::string ka = host_of(a), kb = host_of(b);
    if (ka != kb) {
      const Host& ha = hosts[ka];
      const Host& hb = hosts[kb];
      if (ha.room != hb.room) return ha.room > hb.room;
      if (ha.held != hb.held) return ha.held > hb.held;
      if (ha.gpu_preference != hb.gpu_preference) return ha.gpu_preference < hb.gpu_preference;
      if (ha.fast != hb.fast) return ha.fast;
      return ka < kb;
    }
    if (a.room != b.room) return a.room > b.room;
    if (a.held != b.held) return a.held > b.held;
    if (a.gpu_preference != b.gpu_preference) return a.gpu_preference < b.gpu_preference;
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
