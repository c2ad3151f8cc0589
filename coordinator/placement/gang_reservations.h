// GangReservations: where the gangs of tight nodes run. A gang needs all its ranks at once, so
// it collects free worker slots as they open up (held: closed to loose tasks, so a stream of
// loose work cannot starve it) and starts when it has them all. Pure logic over the registry.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/placement/placement.h"
#include "coordinator/worker_registry.h"
#include "runtime/wire/client_messages.h"

namespace coupler::coordinator {

// A gang task ready to start.
struct GangRequest {
  TaskKey key;
  uint32_t ranks = 1;
  // The node asked for GPUs: only workers with GPUs qualify, unless no alive worker has any
  // (a CPU-only pool trains on its CPUs rather than wait forever).
  bool wants_gpus = false;
  // The node's `requires`: only workers with these labels qualify (see placement.h).
  Labels required;
  // Workers the job may not use (they cannot see its workdir); null: none.
  const std::map<std::string, wire::HostRefusal>* refused = nullptr;
};

// A gang that got all its ranks: the workers and how many ranks each runs, leader (the one
// running the most) first. Their slots are already taken in the registry (gang_ranks).
struct GangPlacement {
  TaskKey key;
  std::vector<std::pair<std::string, uint32_t>> workers;
  int64_t held_ms = 0;  // how long it held part of its ranks before it had them all
};

class GangReservations {
 public:
  // A partial hold older than `hold_timeout_ms` is given back and its gang goes to the back of
  // the line, so partial holds never deadlock two gangs that could each finish alone.
  explicit GangReservations(int64_t hold_timeout_ms) : hold_timeout_ms_(hold_timeout_ms) {}

  // One round: gangs no longer waiting give back their holds; then each waiting gang, in turn
  // order (first ready first), starts if its holds plus the free slots of qualifying workers
  // cover its ranks — packed onto as few workers as possible — or else holds every free
  // qualifying slot it can and stops prefetch to the qualifying workers (gang_waiting). A gang that no set of workers could ever hold (more ranks than
  // their slots in all) holds nothing and waits with a reason.
  std::vector<GangPlacement> Place(const std::vector<GangRequest>& waiting,
                                   WorkerRegistry& registry, int64_t now_ms);

  // The worker's holds vanished with it (died, left, or re-registered).
  void DropWorker(const std::string& worker_id);

  // Why a waiting gang has not started; empty for one never seen.
  std::string Reason(const TaskKey& key) const;
  // Slots the gang holds now.
  uint32_t Held(const TaskKey& key) const;
  // The longest any partial hold has lasted (given back, or completed into a gang): what shows
  // that holds never outlive the timeout by more than a scheduling round.
  int64_t longest_partial_hold_ms() const { return longest_partial_hold_ms_; }

 private:
  struct Hold {
    std::map<std::string, uint32_t> slots;  // worker -> slots held there
    uint32_t total = 0;
    int64_t since_ms = -1;  // when the current partial hold began; -1: holds nothing
    uint64_t turn = 0;
    std::string reason;
  };

  void Release(Hold& hold, WorkerRegistry& registry);
  // A partial hold ends now (given back or completed): remembered for longest_partial_hold_ms.
  void NoteHoldEnd(const Hold& hold, int64_t now_ms);

  int64_t hold_timeout_ms_;
  std::map<TaskKey, Hold> gangs_;
  uint64_t next_turn_ = 0;
  bool marked_ = false;  // some worker has gang_waiting set
  int64_t longest_partial_hold_ms_ = 0;
};

}  // namespace coupler::coordinator
