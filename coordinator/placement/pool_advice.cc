#include "coordinator/placement/pool_advice.h"

#include <algorithm>

namespace coupler::coordinator {

uint32_t RecommendWorkers(const QueueDepth& queued, uint64_t slots_in_use, uint32_t alive_workers,
                          uint64_t alive_slots, uint32_t cap) {
  const uint64_t per_worker =
      alive_workers == 0 ? 1 : std::max<uint64_t>(1, (alive_slots + alive_workers - 1) / alive_workers);
  const uint64_t wanted = slots_in_use + queued.total();
  const uint64_t workers = std::min<uint64_t>((wanted + per_worker - 1) / per_worker, cap);
  if (queued.total() == 0) return static_cast<uint32_t>(std::min<uint64_t>(workers, alive_workers));
  return static_cast<uint32_t>(std::max<uint64_t>(workers, alive_workers));
}

}  // namespace coupler::coordinator
