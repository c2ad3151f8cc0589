#include "client/scale_policy.h"

#include <algorithm>
#include <cstdio>

namespace coupler::client {
namespace {

// A worker that has left the pool for good, as the coordinator reports it.
bool Gone(const wire::WorkerStatus& w) {
  return w.state == pool::WorkerState::kDrained || w.state == pool::WorkerState::kLost ||
         w.state == pool::WorkerState::kBanned;
}

std::string Seconds(int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1fs", static_cast<double>(std::max<int64_t>(0, ms)) / 1000.0);
  return buf;
}

}  // namespace

int64_t ScalePolicy::BackoffMs(uint32_t failures) const {
  if (failures == 0) return 0;
  int64_t ms = config_.backoff_ms;
  for (uint32_t i = 1; i < failures && ms < config_.max_backoff_ms; ++i) ms *= 2;
  return std::min(ms, config_.max_backoff_ms);
}

uint32_t ScalePolicy::Pending() const {
  uint32_t n = 0;
  for (const Launch& l : launches_) n += l.waiting;
  return n;
}

void ScalePolicy::MatchRegistrations(const std::vector<wire::WorkerStatus>& workers) {
  for (const wire::WorkerStatus& w : workers) {
    if (!known_.insert(w.id).second) continue;
    // The pool as first seen was there before any launch of ours. Later, any new id answers
    // the oldest launch: ids chosen by sbatch or a ReplicaSet cannot be foreseen, and one
    // started by hand fills the same need. One that already left (drained, lost) did register.
    if (first_look_ || launches_.empty()) continue;
    failures_ = 0;  // a launch worked: whatever failed before is mended
    if (--launches_.front().waiting == 0) launches_.pop_front();
  }
  first_look_ = false;
}

ScaleDecision ScalePolicy::Decide(const PoolObservation& obs) {
  ScaleDecision d;
  d.recommended = obs.recommended_workers;
  const int64_t now = obs.now_ms;
  MatchRegistrations(obs.workers);

  // Drains asked for: done once the worker left or the coordinator shows it draining (a
  // draining worker takes no new work, so it leaves as soon as it is idle).
  std::map<std::string, const wire::WorkerStatus*> by_id;
  for (const wire::WorkerStatus& w : obs.workers) by_id[w.id] = &w;
  for (auto it = asked_to_drain_.begin(); it != asked_to_drain_.end();) {
    const auto w = by_id.find(it->first);
    if (w == by_id.end() || Gone(*w->second)) {
      it = asked_to_drain_.erase(it);
    } else if (w->second->state != pool::WorkerState::kDraining && now - it->second >= config_.launch_timeout_ms) {
      // The --down command ran and the worker never began to drain: count it again, and wait
      // before trying another drain, as after one that failed.
      d.drains_forgotten.push_back(it->first);
      it = asked_to_drain_.erase(it);
      drain_blocked_until_ms_ = now + std::max(config_.cooldown_down_ms, config_.backoff_ms);
    } else {
      ++it;
    }
  }
  while (!launches_.empty() && now - launches_.front().at_ms >= config_.launch_timeout_ms) {
    d.launches_timed_out += launches_.front().waiting;
    launches_.pop_front();
    ++failures_;
    last_failure_ms_ = now;
  }

  uint32_t active = 0;
  std::vector<const wire::WorkerStatus*> idle;
  for (const wire::WorkerStatus& w : obs.workers) {
    if (Gone(w)) continue;
    if (w.state == pool::WorkerState::kDraining || asked_to_drain_.count(w.id) > 0) {
      ++d.leaving;
      continue;
    }
    // alive or silent (late heartbeats, maybe dead, maybe not): both may still run tasks, so
    // both count against --max. Only a worker heard from lately is drained.
    ++active;
    if (w.state == pool::WorkerState::kAlive && w.running == 0 && w.prefetched == 0) idle.push_back(&w);
  }
  d.pending = Pending();
  d.pool = active + d.pending;
  d.wanted = std::clamp(d.recommended, config_.min_workers, config_.max_workers);
  const uint32_t running = d.pool + d.leaving;  // what --max bounds

  if (d.pool < d.wanted) {
    below_since_ms_.reset();
    const int64_t backoff_end = last_failure_ms_ + BackoffMs(failures_);
    if (failures_ > 0 && now < backoff_end) {
      d.hold = "backing off after " + std::to_string(failures_) + " failed launch" +
               (failures_ == 1 ? "" : "es") + " in a row; next try in " + Seconds(backoff_end - now);
    } else if (last_up_ms_ && now - *last_up_ms_ < config_.cooldown_up_ms) {
      d.hold = "cooling down after the last scale-up; next in " +
               Seconds(*last_up_ms_ + config_.cooldown_up_ms - now);
    } else if (running >= config_.max_workers) {
      d.hold = "at max " + std::to_string(config_.max_workers) + " (" + std::to_string(d.leaving) +
               " leaving)";
    } else {
      const uint32_t n = std::min(d.wanted - d.pool, config_.max_workers - running);
      d.up = ScaleUp{n, d.pool + n};
      launches_.push_back({n, now});
      last_up_ms_ = now;
    }
    return d;
  }
  if (d.pool == d.wanted) {
    below_since_ms_.reset();
    return d;
  }

  // More than the advice wants: drain idle workers, once the advice has stayed low a while.
  if (!below_since_ms_) below_since_ms_ = now;
  if (d.pending > 0) {
    // The advice was above the pool when they were asked for; a drain now would be the flap.
    d.hold = "waiting for " + std::to_string(d.pending) + " launched worker" +
             (d.pending == 1 ? "" : "s") + " to register";
  } else if (now - *below_since_ms_ < config_.cooldown_down_ms) {
    d.hold = "cooling down: below the pool for " + Seconds(now - *below_since_ms_) + " of " +
             Seconds(config_.cooldown_down_ms);
  } else if (drain_blocked_until_ms_ && now < *drain_blocked_until_ms_) {
    d.hold = "a drain failed; next try in " + Seconds(*drain_blocked_until_ms_ - now);
  } else {
    const uint32_t surplus = active - d.wanted;
    // Highest id first: deterministic, and under Slurm (slurm-JOBID) the newest go first.
    std::sort(idle.begin(), idle.end(),
              [](const wire::WorkerStatus* a, const wire::WorkerStatus* b) { return a->id > b->id; });
    for (uint32_t i = 0; i < surplus && i < idle.size(); ++i) {
      d.drains.push_back({idle[i]->id, active - (i + 1)});
      asked_to_drain_[idle[i]->id] = now;
    }
    if (d.drains.empty()) {
      d.hold = std::to_string(surplus) + " more than the advice, none idle";
    }
  }
  return d;
}

void ScalePolicy::LaunchFailed(int64_t now_ms) {
  if (!launches_.empty()) launches_.pop_back();
  ++failures_;
  last_failure_ms_ = now_ms;
}

void ScalePolicy::DrainFailed(const std::string& worker_id, int64_t now_ms) {
  asked_to_drain_.erase(worker_id);
  drain_blocked_until_ms_ = now_ms + std::max(config_.cooldown_down_ms, config_.backoff_ms);
}

}  // namespace coupler::client
