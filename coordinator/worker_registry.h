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

#include "runtime/wire/worker_messages.h"

namespace coupler::coordinator {

// A task in flight on a worker: (job index in the scheduler, task id).
using TaskKey = std::pair<uint32_t, uint64_t>;

enum class WorkerState : uint8_t { kAlive, kDraining, kDead };
std::string_view WorkerStateName(WorkerState s);

struct WorkerEntry {
  wire::RegisterWorker info;
  WorkerState state = WorkerState::kAlive;
  int64_t last_heard_ms = 0;
  std::set<TaskKey> inflight;
  uint64_t tasks_done = 0;

  // Tasks it may still be sent: slots + prefetch minus what it holds, so its pipe never runs
  // dry and it never hoards.
  uint32_t credit() const {
    if (state != WorkerState::kAlive) return 0;
    const uint64_t cap = uint64_t{info.slots} + info.prefetch;
    return inflight.size() >= cap ? 0 : static_cast<uint32_t>(cap - inflight.size());
  }
  bool has_gpus() const { return !info.gpus.empty(); }
};

class WorkerRegistry {
 public:
  explicit WorkerRegistry(int64_t dead_after_ms) : dead_after_ms_(dead_after_ms) {}

  // A (re-)registration. Returns the tasks the worker held under an earlier registration
  // (a restarted worker process with the same id): they are lost.
  std::set<TaskKey> Register(const wire::RegisterWorker& info, int64_t now_ms);
  // Any message from the worker. False when the worker is unknown (it must register again).
  bool Heard(const std::string& id, int64_t now_ms);
  void SetDraining(const std::string& id);

  // Workers silent for longer than the timeout: marked dead and returned with what they held.
  std::vector<std::pair<std::string, std::set<TaskKey>>> ReapSilent(int64_t now_ms);
  // A worker that said goodbye or must be forgotten: returns what it held.
  std::set<TaskKey> Remove(const std::string& id);

  WorkerEntry* Find(const std::string& id);
  const std::map<std::string, WorkerEntry>& workers() const { return workers_; }
  std::map<std::string, WorkerEntry>& mutable_workers() { return workers_; }
  size_t alive() const;

 private:
  int64_t dead_after_ms_;
  std::map<std::string, WorkerEntry> workers_;
};

}  // namespace coupler::coordinator
