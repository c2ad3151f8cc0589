#include "coordinator/worker_registry.h"

#include <algorithm>
#include <optional>

namespace coupler::coordinator {
namespace {

// The most a worker's timeout is stretched after an outage: covers TCP's retries after cuts of
// up to about half a minute, while a worker that really died during a long outage is still
// given up on soon after the others are back.
constexpr int64_t kMaxBackoffGraceMs = 30'000;

}  // namespace

void WorkerEntry::StartTask(const TaskKey& key, uint64_t share) {
  inflight[key] = HeldTask{sent++, false};
  if (share == 0 || gpu_shares.empty()) return;
  // A share that fits no device now was sent because no worker could ever hold it: the worker
  // fails it at once with the reason, and nothing is reserved for it here.
  if (std::optional<int> device = gpu_shares.Reserve(share)) share_of[key] = {*device, share};
}

uint32_t WorkerEntry::started() const {
  uint32_t n = 0;
  for (const auto& [key, task] : inflight) n += task.started ? 1 : 0;
  return n;
}

bool WorkerEntry::EndTask(const TaskKey& key) {
  if (auto it = share_of.find(key); it != share_of.end()) {
    gpu_shares.Release(it->second.first, it->second.second);
    share_of.erase(it);
  }
  return inflight.erase(key) > 0;
}

void WorkerEntry::ClearWork() {
  inflight.clear();
  gang_ranks = 0;
  held = 0;
  for (const auto& [key, share] : share_of) gpu_shares.Release(share.first, share.second);
  share_of.clear();
}

HeldTasks WorkerRegistry::Register(const wire::RegisterWorker& info, int64_t now_ms) {
  HeldTasks lost;
  auto it = workers_.find(info.worker_id);
  if (it != workers_.end()) lost = std::move(it->second.inflight);
  WorkerEntry& w = workers_[info.worker_id];
  w.info = info;  // key_name and route are the event loop's to set
  w.state = WorkerState::kAlive;
  w.last_heard_ms = now_ms;
  w.ClearWork();
  std::vector<pool::GpuShareLedger::Device> devices;
  for (const wire::GpuInfo& g : info.gpus) {
    devices.push_back({static_cast<int>(g.index), pool::ShareCapacity(g.free_memory)});
  }
  w.gpu_shares = pool::GpuShareLedger(std::move(devices));
  NoteHeard(now_ms);
  return lost;
}

void WorkerRegistry::NoteHeard(int64_t now_ms) {
  if (blackout_) {
    // The first word after a time no worker was heard at all: every worker gets a fresh
    // timeout, as its messages queued meanwhile may still be on their way. TCP retries a
    // connection with exponential backoff, so after an outage of T its next retry may come up
    // to about T later: the grace grows with the outage (bounded, see kMaxBackoffGraceMs).
    blackout_ = false;
    const int64_t outage = now_ms - last_heard_any_ms_;
    const int64_t extra = std::clamp<int64_t>(outage - dead_after_ms_, 0, kMaxBackoffGraceMs);
    for (auto& [id, w] : workers_) {
      if (!w.gone()) w.last_heard_ms = std::max(w.last_heard_ms, now_ms + extra);
    }
  }
  last_heard_any_ms_ = std::max(last_heard_any_ms_, now_ms);
}

bool WorkerRegistry::Silent(const WorkerEntry& w, int64_t now_ms) const {
  return !w.gone() && now_ms - w.last_heard_ms > dead_after_ms_;
}

bool WorkerRegistry::Heard(const std::string& id, int64_t now_ms) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.gone()) return false;
  NoteHeard(now_ms);
  it->second.last_heard_ms = now_ms;
  return true;
}

void WorkerRegistry::SetDraining(const std::string& id) {
  auto it = workers_.find(id);
  if (it != workers_.end() && it->second.state == WorkerState::kAlive) {
    it->second.state = WorkerState::kDraining;
  }
}

bool WorkerRegistry::MarkDrained(const std::string& id, int64_t now_ms) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.state != WorkerState::kDraining) return false;
  WorkerEntry& w = it->second;
  // Anything still held here (a task sent before it said it drains, not yet arrived) means it
  // did not finish: it stays draining, and if it leaves anyway it is lost and the task re-runs.
  if (!w.inflight.empty() || w.gang_ranks > 0) return false;
  w.ClearWork();  // a gang's hold on its slots, if any, is of no use now
  w.state = WorkerState::kDrained;
  w.left_ms = now_ms;
  return true;
}

void WorkerRegistry::MarkLost(WorkerEntry& w, int64_t now_ms) {
  w.ClearWork();
  w.state = WorkerState::kLost;
  w.left_ms = now_ms;
  ++workers_lost_total_;
}

std::vector<std::pair<std::string, HeldTasks>> WorkerRegistry::ReapSilent(int64_t now_ms) {
  std::vector<std::pair<std::string, HeldTasks>> dead;
  // Forgotten: its key binding too, which matters no more than after a coordinator restart
  // (nothing is held under its id, and a worker registering under it starts afresh).
  std::erase_if(workers_, [&](const auto& entry) {
    return entry.second.gone() && now_ms - entry.second.left_ms > kForgetAfterMs;
  });
  if (now_ms - last_heard_any_ms_ > dead_after_ms_ / 2) {
    // No worker at all was heard for half the timeout, while a live one beats far more often:
    // most likely the coordinator's own link is down, not every worker at once, and nobody
    // could run re-queued work anyway. So nobody is given up on until some worker is heard
    // again (the finished results they hold are then delivered, not re-run). Half, not the
    // whole timeout: the workers' last beats before a cut are up to a beat apart, and the first
    // to pass the timeout must not be given up on for the others' last beats. A worker that
    // really died is reaped a timeout after any other is heard, a new one included.
    for (const auto& [id, w] : workers_) blackout_ |= Silent(w, now_ms);
    return dead;
  }
  for (auto& [id, w] : workers_) {
    if (w.gone() || now_ms - w.last_heard_ms <= dead_after_ms_) continue;
    dead.emplace_back(id, std::move(w.inflight));
    MarkLost(w, now_ms);
  }
  return dead;
}

HeldTasks WorkerRegistry::Remove(const std::string& id, int64_t now_ms) {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.gone()) return {};
  HeldTasks held = std::move(it->second.inflight);
  MarkLost(it->second, now_ms);
  return held;
}

WorkerEntry* WorkerRegistry::Find(const std::string& id) {
  auto it = workers_.find(id);
  return it == workers_.end() ? nullptr : &it->second;
}

size_t WorkerRegistry::alive() const {
  size_t n = 0;
  for (const auto& [id, w] : workers_) n += w.gone() ? 0 : 1;
  return n;
}

}  // namespace coupler::coordinator
