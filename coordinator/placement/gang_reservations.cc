#include "coordinator/placement/gang_reservations.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "coordinator/placement/placement.h"
#include "coordinator/placement/rank_packing.h"

namespace coupler::coordinator {
namespace {

struct Candidate {
  std::string id;
  std::string address;  // its host
  uint32_t mine = 0;  // slots this gang already holds there
  uint32_t free = 0;  // slots open to anyone
  bool fast = false;  // FastInterconnect
  uint8_t gpu_preference = 0;  // WorkerEntry::gpu_preference
};

}  // namespace

void GangReservations::Release(Hold& hold, WorkerRegistry& registry) {
  for (const auto& [id, n] : hold.slots) {
    if (WorkerEntry* w = registry.Find(id)) w->held -= std::min(n, w->held);
  }
  hold.slots.clear();
  hold.total = 0;
  hold.since_ms = -1;
}

void GangReservations::NoteHoldEnd(const Hold& hold, int64_t now_ms) {
  if (hold.since_ms >= 0) {
    longest_partial_hold_ms_ = std::max(longest_partial_hold_ms_, now_ms - hold.since_ms);
  }
}

void GangReservations::DropWorker(const std::string& worker_id) {
  for (auto& [key, hold] : gangs_) {
    auto it = hold.slots.find(worker_id);
    if (it == hold.slots.end()) continue;
    hold.total -= it->second;
    hold.slots.erase(it);
    if (hold.total == 0) hold.since_ms = -1;
  }
}

std::string GangReservations::Reason(const TaskKey& key) const {
  auto it = gangs_.find(key);
  return it == gangs_.end() ? std::string() : it->second.reason;
}

uint32_t GangReservations::Held(const TaskKey& key) const {
  auto it = gangs_.find(key);
  return it == gangs_.end() ? 0 : it->second.total;
}

std::vector<GangPlacement> GangReservations::Place(const std::vector<GangRequest>& waiting,
                                                   WorkerRegistry& registry, int64_t now_ms) {
  // The common case, every round of the event loop: no gang anywhere.
  if (waiting.empty() && gangs_.empty() && !marked_) return {};
  std::set<TaskKey> still_waiting;
  for (const GangRequest& r : waiting) still_waiting.insert(r.key);
  for (auto it = gangs_.begin(); it != gangs_.end();) {
    if (still_waiting.count(it->first) != 0) {
      ++it;
      continue;
    }
    NoteHoldEnd(it->second, now_ms);
    Release(it->second, registry);
    it = gangs_.erase(it);
  }

  std::vector<const GangRequest*> order;
  for (const GangRequest& r : waiting) {
    auto [it, fresh] = gangs_.try_emplace(r.key);
    if (fresh) it->second.turn = next_turn_++;
    order.push_back(&r);
  }
  std::stable_sort(order.begin(), order.end(), [this](const GangRequest* a, const GangRequest* b) {
    return gangs_.at(a->key).turn < gangs_.at(b->key).turn;
  });

  for (auto& [id, w] : registry.mutable_workers()) w.gang_waiting = false;
  marked_ = false;

  std::vector<GangPlacement> placed;
  for (const GangRequest* req : order) {
    Hold& hold = gangs_.at(req->key);
    auto admits = [&](const WorkerEntry& w) {
      return w.state == WorkerState::kAlive && LabelsMatch(req->required, w.info.labels) &&
             (req->refused == nullptr || req->refused->count(w.info.worker_id) == 0);
    };
    // GPUs are preferred among the workers the labels admit, not the whole pool: a labeled
    // CPU-only group trains on its CPUs as an unlabeled CPU-only pool would.
    bool any_gpu = false;
    for (const auto& [id, w] : registry.workers()) any_gpu |= admits(w) && w.has_gpus();
    const bool gpu_only = req->wants_gpus && any_gpu;
    auto fits_kind = [&](const WorkerEntry& w) { return admits(w) && (!gpu_only || w.has_gpus()); };
    std::vector<GangSeat> seats;
    for (const auto& [id, w] : registry.workers()) {
      if (fits_kind(w)) {
        seats.push_back({id, w.info.address, SlurmJobOf(w.info.labels),
                         GangSlots(w.info.slots, w.info.labels)});
      }
    }
    const std::set<std::string> usable = OneAllocationPerHost(seats);
    const size_t set_aside = seats.size() - usable.size();
    auto qualifies = [&](const WorkerEntry& w) {
      return fits_kind(w) && usable.count(w.info.worker_id) != 0;
    };
    // Holds on workers that stopped qualifying (draining, dead) are given back.
    for (auto it = hold.slots.begin(); it != hold.slots.end();) {
      WorkerEntry* w = registry.Find(it->first);
      if (w != nullptr && qualifies(*w)) {
        ++it;
        continue;
      }
      if (w != nullptr) w->held -= std::min(it->second, w->held);
      hold.total -= it->second;
      it = hold.slots.erase(it);
    }
    if (hold.total == 0) {
      NoteHoldEnd(hold, now_ms);
      hold.since_ms = -1;
    }

    uint64_t capacity = 0;
    size_t qualifying = 0;
    std::vector<Candidate> candidates;
    for (auto& [id, w] : registry.mutable_workers()) {
      if (!qualifies(w)) continue;
      const uint32_t cap = GangSlots(w.info.slots, w.info.labels);
      capacity += cap;
      ++qualifying;
      auto found = hold.slots.find(id);
      const uint32_t mine = found == hold.slots.end() ? 0 : found->second;
      const uint32_t free = std::min(w.free_slots(), cap > mine ? cap - mine : 0u);
      candidates.push_back({id, w.info.address, mine, free, FastInterconnect(w.info.labels),
                            static_cast<uint8_t>(w.gpu_preference)});
    }
    const std::string kind = std::string(req->required.empty() ? "" : "matching ") +
                             (gpu_only ? "GPU worker" : "worker");
    if (req->ranks > capacity) {
      NoteHoldEnd(hold, now_ms);
      Release(hold, registry);
      hold.reason = fmt::format(
          "cannot be placed yet: needs {} ranks, the {} alive {}{} have {} slots in all", req->ranks,
          qualifying, kind, qualifying == 1 ? "" : "s", capacity);
      if (set_aside > 0) {
        hold.reason += fmt::format(
            " ({} more on nodes shared by several Slurm jobs: a gang runs in one job per node)",
            set_aside == 1 ? "1 worker" : fmt::format("{} workers", set_aside));
      }
      continue;
    }
    if (hold.total > 0 && now_ms - hold.since_ms >= hold_timeout_ms_) {
      // Let other gangs and loose work have the slots; this gang gathers again from the back.
      hold.reason = fmt::format("gave back a partial hold of {} of {} slots after {:g} s; waiting",
                                hold.total, req->ranks, static_cast<double>(hold_timeout_ms_) / 1000);
      NoteHoldEnd(hold, now_ms);
      Release(hold, registry);
      hold.turn = next_turn_++;
      continue;
    }

    uint64_t available = 0;
    for (const Candidate& c : candidates) available += c.mine + c.free;
    if (available >= req->ranks) {
      std::vector<RankCandidate> rooms;
      for (const Candidate& c : candidates) {
        rooms.push_back({c.id, c.address, c.mine + c.free, c.mine, c.fast, c.gpu_preference});
      }
      GangPlacement p;
      p.key = req->key;
      p.workers = PackRanks(std::move(rooms), req->ranks);
      p.held_ms = hold.since_ms >= 0 ? now_ms - hold.since_ms : 0;
      NoteHoldEnd(hold, now_ms);
      // Every hold turns into ranks or goes back, including holds on workers left unused.
      for (const Candidate& c : candidates) {
        WorkerEntry& w = *registry.Find(c.id);
        w.held -= std::min(c.mine, w.held);
      }
      for (const auto& [id, take] : p.workers) registry.Find(id)->gang_ranks += take;
      placed.push_back(std::move(p));
      gangs_.erase(req->key);
      continue;
    }

    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      if (a.free != b.free) return a.free > b.free;
      return a.id < b.id;
    });
    for (const Candidate& c : candidates) {
      WorkerEntry& w = *registry.Find(c.id);
      w.gang_waiting = true;
      marked_ = true;
      const uint32_t take = std::min(c.free, req->ranks - hold.total);
      if (take == 0) continue;
      w.held += take;
      hold.slots[c.id] += take;
      hold.total += take;
    }
    if (hold.total > 0 && hold.since_ms < 0) hold.since_ms = now_ms;
    hold.reason = fmt::format("waiting for {} more free slot{} (holding {} of {})",
                              req->ranks - hold.total, req->ranks - hold.total == 1 ? "" : "s",
                              hold.total, req->ranks);
  }
  return placed;
}

}  // namespace coupler::coordinator
