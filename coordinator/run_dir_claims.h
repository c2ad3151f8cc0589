// RunDirClaims: who may touch a finished job's run directory now — a `coupler retry` about to
// run the job in it again, or the retention sweeper about to remove it. Each asks first, under
// one mutex, so the two never overlap: a retry that began holds the sweeper off, a removal
// that began (or ended) refuses the retry with the reason. The sweeper runs on a thread of its
// own; retries on the event loop, where this costs one uncontended lock per retry.
#pragma once

#include <map>
#include <mutex>
#include <string>

namespace coupler::coordinator {

class RunDirClaims {
 public:
  // The loop, before a retry: false (with why) when the job's run directory is being or was
  // removed since this coordinator started.
  bool BeginRetry(const std::string& job_id, std::string* why) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = state_.find(job_id);
    if (it != state_.end() && it->second != State::kRetrying) {
      *why = it->second == State::kRemoving ? "its run directory is being removed (retention)"
                                            : "its run directory was removed (retention)";
      return false;
    }
    state_[job_id] = State::kRetrying;
    return true;
  }
  void EndRetry(const std::string& job_id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = state_.find(job_id);
    if (it != state_.end() && it->second == State::kRetrying) state_.erase(it);
  }

  // The sweeper, before removing: false when a retry holds the job.
  bool BeginRemoval(const std::string& job_id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, fresh] = state_.emplace(job_id, State::kRemoving);
    if (!fresh && it->second == State::kRetrying) return false;
    it->second = State::kRemoving;
    return true;
  }
  // `removed`: the directory is gone (later retries are refused); otherwise it stays as it was.
  void EndRemoval(const std::string& job_id, bool removed) {
    std::lock_guard<std::mutex> lock(mu_);
    if (removed) {
      state_[job_id] = State::kRemoved;
    } else {
      state_.erase(job_id);
    }
  }

 private:
  enum class State { kRetrying, kRemoving, kRemoved };
  std::mutex mu_;
  std::map<std::string, State> state_;
};

}  // namespace coupler::coordinator
