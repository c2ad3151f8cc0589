// Pool advice: how much work waits, by the hardware it needs, and how many workers would run
// it, so an operator's script can grow or shrink the pool from `coupler status --json`.
// Pure arithmetic over counts the scheduler gathers.
#pragma once

#include <cstdint>

namespace coupler::coordinator {

// Work that is ready but not running: queued at the coordinator, or prefetched (sent to a
// worker that has no slot free for it yet).
struct QueueDepth {
  uint64_t cpu_tasks = 0;   // loose tasks of nodes asking for no GPU
  uint64_t gpu_tasks = 0;   // loose tasks of nodes asking for GPUs (whole or a gpu_memory share)
  uint64_t gang_ranks = 0;  // ranks of tight nodes still waiting for their gang
  // Loose tasks waiting in alive workers' queues: a worker with 2 slots and 10 prefetched has
  // 10 tasks' backlog another worker could run, though the coordinator queues none.
  uint64_t prefetched_tasks = 0;

  uint64_t total() const { return cpu_tasks + gpu_tasks + gang_ranks + prefetched_tasks; }
};

// Never recommend more than this many workers: a runaway queue (a million tiny tasks) must not
// make a script ask the cloud for a million machines.
inline constexpr uint32_t kMaxRecommendedWorkers = 256;

// The rule: every queued or prefetched task or rank and every slot in use wants one slot; workers are
// assumed to bring the current average slots per worker (1 with no worker alive). While work
// is queued the answer is never below the alive count (removing workers cannot help) and at
// most max(cap, alive); with nothing queued it is the workers the running work fills, so an
// idle pool may shrink to 0.
uint32_t RecommendWorkers(const QueueDepth& queued, uint64_t slots_in_use, uint32_t alive_workers,
                          uint64_t alive_slots, uint32_t cap = kMaxRecommendedWorkers);

}  // namespace coupler::coordinator
