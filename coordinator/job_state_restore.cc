// JobState's tasks handed back without a result of theirs: an attempt that never started or was
// taken from its worker, and what a restart does — attempts adopted from the workers that hold
// them, or abandoned, and counts restored from the store.
#include "coordinator/job_state.h"

#include <algorithm>
#include <deque>

namespace coupler::coordinator {

void JobState::Requeue(uint64_t t) {
  if (finished() || state_[t] != static_cast<uint8_t>(TaskState::kRunning)) return;
  const size_t p = table_.Describe(t).plan_node;
  EndRunning(p);
  // Undo what MarkRunning counted: this attempt never ran, so it is handed out again as is.
  if (attempts_[t] > 0 && attempts_[t] < 255) --attempts_[t];
  --node_attempts_[p];
  --total_attempts_;
  ReadyAgain(t);
}

void JobState::Reissue(uint64_t t) {
  if (finished() || state_[t] != static_cast<uint8_t>(TaskState::kRunning)) return;
  EndRunning(table_.Describe(t).plan_node);
  if (attempt_base_[t] < 255) ++attempt_base_[t];
  ReadyAgain(t);
}

std::vector<uint64_t> JobState::AwaitAdoption(const std::vector<uint64_t>& tasks) {
  std::vector<uint64_t> taken;
  if (finished()) return taken;
  for (const uint64_t t : tasks) {
    if (t >= table_.size() || state_[t] != static_cast<uint8_t>(TaskState::kReady)) continue;
    SetState(t, TaskState::kRunning);
    ++node_running_[table_.Describe(t).plan_node];
    ++running_;
    taken.push_back(t);
  }
  if (taken.empty()) return taken;
  if (phase_ == JobPhase::kQueued) phase_ = JobPhase::kRunning;
  // Out of the queues at once (one pass each), so ready counts stay true.
  auto not_ready = [this](uint64_t t) { return state_[t] != static_cast<uint8_t>(TaskState::kReady); };
  queues_.EraseIf(not_ready);
  return taken;
}

bool JobState::AdoptQueued(uint64_t t, uint32_t attempt) {
  if (finished() || t >= table_.size() || state_[t] != static_cast<uint8_t>(TaskState::kReady) ||
      attempts_[t] != attempt) {
    return false;
  }
  MarkRunning(t);
  return true;
}

void JobState::AbandonAdoption(uint64_t t) {
  if (finished() || state_[t] != static_cast<uint8_t>(TaskState::kRunning)) return;
  EndRunning(table_.Describe(t).plan_node);
  ReadyAgain(t);
}

bool JobState::ChargeUnreportedLoss(uint64_t t) {
  if (++unreported_losses_[t] < kUnreportedLossesCharged) return false;
  unreported_losses_[t] = 0;
  return true;
}

void JobState::RestoreDone(uint64_t t, uint32_t attempts) {
  attempts_[t] = static_cast<uint8_t>(std::min<uint32_t>(attempts, 255));
  total_attempts_ += attempts;
  node_attempts_[table_.Describe(t).plan_node] += attempts;
  Complete(t);
}

void JobState::RestoreAttempts(uint64_t t, uint32_t attempts) {
  attempts_[t] = static_cast<uint8_t>(std::min<uint32_t>(attempts, 255));
  total_attempts_ += attempts;
  node_attempts_[table_.Describe(t).plan_node] += attempts;
}

}  // namespace coupler::coordinator
