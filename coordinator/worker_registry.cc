#include "coordinator/worker_registry.h"

namespace coupler::coordinator {

std::string_view WorkerStateName(WorkerState s) {
  switch (s) {
    case WorkerState::kAlive: return "alive";
    case WorkerState::kDraining: return "draining";
    case WorkerState::kDead: return "dead";
  }
  return "alive";
}

std::set<TaskKey> WorkerRegistry::Register(const wire::RegisterWorker& info, int64_t now_ms) {
  std::set<TaskKey> lost;
  auto it = workers_.find(info.worker_id);
  if (it != workers_.end()) lost = std::move(it->second.inflight);
  WorkerEntry& w = workers_[info.worker_id];
  w.info = info;
  w.state = WorkerState::kAlive;
  w.last_heard_ms = now_ms;
  w.inflight.clear();
  w.gang_ranks = 0;
  w.held = 0;
  return lost;
}

bool WorkerRegistry::Heard(const std::string& id, int64_t now_ms) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.state == WorkerState::kDead) return false;
  it->second.last_heard_ms = now_ms;
  return true;
}

void WorkerRegistry::SetDraining(const std::string& id) {
  auto it = workers_.find(id);
  if (it != workers_.end() && it->second.state == WorkerState::kAlive) {
    it->second.state = WorkerState::kDraining;
  }
}

std::vector<std::pair<std::string, std::set<TaskKey>>> WorkerRegistry::ReapSilent(int64_t now_ms) {
  std::vector<std::pair<std::string, std::set<TaskKey>>> dead;
  for (auto& [id, w] : workers_) {
    if (w.state == WorkerState::kDead || now_ms - w.last_heard_ms <= dead_after_ms_) continue;
    w.state = WorkerState::kDead;
    dead.emplace_back(id, std::move(w.inflight));
    w.inflight.clear();
    w.gang_ranks = 0;
    w.held = 0;
  }
  return dead;
}

std::set<TaskKey> WorkerRegistry::Remove(const std::string& id) {
  auto it = workers_.find(id);
  if (it == workers_.end()) return {};
  std::set<TaskKey> held = std::move(it->second.inflight);
  it->second.inflight.clear();
  it->second.gang_ranks = 0;
  it->second.held = 0;
  it->second.state = WorkerState::kDead;
  return held;
}

WorkerEntry* WorkerRegistry::Find(const std::string& id) {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

size_t WorkerRegistry::alive() const {
  size_t n = 0;
  for (const auto& [id, w] : workers_) n += w.state != WorkerState::kDead ? 1 : 0;
  return n;
}

}  // namespace coupler::coordinator
