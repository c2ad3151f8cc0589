// WorkerRegistry: the workers the coordinator knows — what each offers, what it holds, when it
// was last heard from. Pure logic with an injected clock: the event loop feeds it messages
// and asks it who has credit and who has gone silent.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/gpu_fences.h"
#include "coordinator/gpu_idle_watch.h"
#include "runtime/pool/gpu_share_ledger.h"
#include "runtime/pool/worker_state.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::coordinator {

// A task in flight on a worker: (job index in the scheduler, task id).
using TaskKey = std::pair<uint32_t, uint64_t>;
// A loose task a worker holds: its place in the order they were sent (the worker runs them
// first in, first out), and whether the worker has reported it running.
struct HeldTask {
  uint64_t sent = 0;
  bool started = false;
};
using HeldTasks = std::map<TaskKey, HeldTask>;

// The registry stores kAlive, kDraining, kDrained (it finished a drain holding nothing and said
// goodbye: its last heartbeat) and kLost (given up on: silent past the timeout, or gone without
// a drain); never kSilent, which the status reports for an alive worker past its timeout.
// Drained and lost ones are listed for a while after they left (see
// WorkerRegistry::kForgetAfterMs), then forgotten.
using pool::WorkerState;
using pool::WorkerStateName;

struct WorkerEntry {
  wire::RegisterWorker info;
  // Who it is: the name of the key it authenticated with, bound to its id at the first
  // registration (another key can never register under that id), and the routing id of its
  // current connection (the socket's, not one the peer chose).
  std::string key_name;
  std::string route;
  WorkerState state = WorkerState::kAlive;
  int64_t last_heard_ms = 0;
  int64_t left_ms = 0;  // when it became drained or lost
  HeldTasks inflight;  // loose tasks
  uint64_t sent = 0;   // tasks sent so far: the next one's place in `inflight`
  uint64_t tasks_done = 0;
  // Slots taken by the ranks of running gangs, and slots held for a gang still gathering its
  // ranks (coordinator/placement/gang_reservations.h). Both are closed to loose tasks.
  uint32_t gang_ranks = 0;
  uint32_t held = 0;
  // A waiting gang could use this worker: it gets no prefetch, so its loose tasks drain and
  // its slots open up for the gang (a full prefetch queue would never leave a slot free).
  bool gang_waiting = false;
  // The GPU shares (gpu_memory tasks) it runs, packed by the rule the worker packs them by, so
  // it is sent only shares that fit and the rest wait here, where any worker may take them.
  pool::GpuShareLedger gpu_shares{{}};
  std::map<TaskKey, std::pair<int, uint64_t>> share_of;  // task -> (device, bytes)
  // Its GPUs' last samples and the idle-GPU warning (gpu_idle_watch.h; metrics read it there).
  GpuActivity gpu;
  // Its GPUs placement avoids (gpu_fences.h, which decides; copied here as it changes), and how
  // much placement prefers the others to it (RankGpus over its last samples).
  std::vector<uint32_t> fenced_gpus;
  GpuPreference gpu_preference = GpuPreference::kCool;

  // Loose tasks it may still be sent: its open slots + prefetch minus what it holds, so its
  // pipe never runs dry and it never hoards. A worker whose slots are all reserved for gangs
  // gets none, not even prefetch: it would run them in the reserved slots.
  uint32_t credit() const {
    if (state != WorkerState::kAlive) return 0;
    const uint64_t reserved = uint64_t{gang_ranks} + held;
    if (reserved >= info.slots) return 0;
    const uint64_t cap = info.slots - reserved + (gang_waiting ? 0 : info.prefetch);
    return inflight.size() >= cap ? 0 : static_cast<uint32_t>(cap - inflight.size());
  }
  // Slots running nothing and reserved for nothing: what a gang may reserve here. Prefetched
  // loose tasks count as running, so a gang never shares a slot with one.
  uint32_t free_slots() const {
    if (state != WorkerState::kAlive) return 0;
    const uint64_t used = inflight.size() + uint64_t{gang_ranks} + held;
    return used >= info.slots ? 0 : static_cast<uint32_t>(info.slots - used);
  }
  // It offers GPUs to placement: some it registered are not fenced.
  bool has_gpus() const { return info.gpus.size() > fenced_gpus.size(); }
  // Drained or lost: it runs nothing and is only still listed.
  bool gone() const { return state == WorkerState::kDrained || state == WorkerState::kLost; }
  // Held loose tasks it reported running, and those waiting unstarted in its queue.
  uint32_t started() const;
  uint32_t prefetched() const { return static_cast<uint32_t>(inflight.size()) - started(); }

  // A loose task sent to it; `share`: the GPU memory it asks for (0: none).
  void StartTask(const TaskKey& key, uint64_t share);
  // It reported the task running: from now on, losing it costs the task an attempt.
  void MarkStarted(const TaskKey& key) {
    if (auto it = inflight.find(key); it != inflight.end()) it->second.started = true;
  }
  // A loose task it held ended (result, cancel): frees its slot and its share. False when it
  // did not hold the task.
  bool EndTask(const TaskKey& key);
  // Forgets every task, hold and share (it died, left or registered again).
  void ClearWork();
};

class WorkerRegistry {
 public:
  explicit WorkerRegistry(int64_t dead_after_ms) : dead_after_ms_(dead_after_ms) {}

  // How long a drained or lost worker stays listed (so `coupler workers` shows what became of
  // it) before it is forgotten: long enough for an operator to look, short enough that a pool
  // of short-lived cloud workers does not grow its list for ever. Lost ones stay counted
  // (workers_lost_total).
  static constexpr int64_t kForgetAfterMs = 10 * 60'000;

  // A (re-)registration. Returns the tasks the worker held under an earlier registration
  // (a restarted worker process with the same id): they are lost.
  HeldTasks Register(const wire::RegisterWorker& info, int64_t now_ms);
  // Any message from the worker. False when the worker is unknown (it must register again).
  bool Heard(const std::string& id, int64_t now_ms);
  void SetDraining(const std::string& id);

  // A draining worker's heartbeat said it runs nothing: if it holds nothing here either, it
  // has finished its drain and is leaving (its last beat), and becomes drained. True then.
  bool MarkDrained(const std::string& id, int64_t now_ms);

  // Workers silent for longer than the timeout: marked lost and returned with what they held.
  // None while no worker at all has been heard for the timeout (see worker_registry.cc).
  // Also forgets the workers drained or lost for kForgetAfterMs.
  std::vector<std::pair<std::string, HeldTasks>> ReapSilent(int64_t now_ms);
  // Past the timeout but not given up on yet (no worker is heard: the coordinator's link).
  bool Silent(const WorkerEntry& w, int64_t now_ms) const;
  // A worker gone without a drain (it must be given up on now): marked lost, returns what it
  // held.
  HeldTasks Remove(const std::string& id, int64_t now_ms);

  WorkerEntry* Find(const std::string& id);
  const std::map<std::string, WorkerEntry>& workers() const { return workers_; }
  std::map<std::string, WorkerEntry>& mutable_workers() { return workers_; }
  // Registered and not gone (alive or draining).
  size_t alive() const;
  // Workers ever given up on, forgotten ones included: what the metrics count.
  uint64_t workers_lost_total() const { return workers_lost_total_; }
  // At start: the count the state kept (store/counter_rows.h), so the counter goes on.
  void RestoreWorkersLostTotal(uint64_t n) { workers_lost_total_ = n; }

 private:
  void NoteHeard(int64_t now_ms);
  void MarkLost(WorkerEntry& w, int64_t now_ms);

  int64_t dead_after_ms_;
  std::map<std::string, WorkerEntry> workers_;
  int64_t last_heard_any_ms_ = 0;
  bool blackout_ = false;  // no worker heard for the timeout: reaping is held off
  uint64_t workers_lost_total_ = 0;
};

}  // namespace coupler::coordinator
