// Scale policy: what `coupler autoscale` decides from one look at the coordinator (its
// recommended_workers and the worker list). Pure: the caller brings the time and runs the
// actions, so every rule here is tested in microseconds (tests/unit/scale_policy_test.cc).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/wire/client_messages.h"

namespace coupler::client {

struct ScaleConfig {
  uint32_t min_workers = 1;
  uint32_t max_workers = 1;
  // Between two scale-ups. Pending launches already stop a second ask for the same work, so
  // this only paces a queue that keeps growing.
  int64_t cooldown_up_ms = 0;
  // The advice must stay below the pool this long before a worker is drained: what keeps a
  // pool from shrinking in the lull between two jobs and growing again a moment later.
  int64_t cooldown_down_ms = 30'000;
  // A worker asked for and not registered within this long is given up on (and counted as a
  // failed launch); a drain asked for and still not visible after this long is forgotten.
  int64_t launch_timeout_ms = 300'000;
  // After a failed launch no other is tried for this long, doubled per failure in a row up to
  // max_backoff_ms: a broken --up command must not run every poll.
  int64_t backoff_ms = 10'000;
  int64_t max_backoff_ms = 600'000;
};

// One look at the coordinator.
struct PoolObservation {
  uint32_t recommended_workers = 0;
  uint64_t queued = 0;  // tasks and gang ranks waiting, for the decision's line
  std::vector<wire::WorkerStatus> workers;
  int64_t now_ms = 0;  // a steady clock
};

struct ScaleUp {
  uint32_t n = 0;       // workers to add
  uint32_t target = 0;  // the pool once they are there
};

struct DrainAction {
  std::string worker_id;
  uint32_t target = 0;  // the pool once this one (and the drains before it) have left
};

// What one look decided, with the numbers it decided on (for the line it prints).
struct ScaleDecision {
  std::optional<ScaleUp> up;
  std::vector<DrainAction> drains;
  // Why nothing was done when something was wanted ("at max", "backing off ..."); empty when
  // the pool is where the advice wants it or an action was taken.
  std::string hold;
  // Launches given up on this look (workers asked for that never registered in time), and
  // drains forgotten (workers asked to drain that the coordinator still shows alive).
  uint32_t launches_timed_out = 0;
  std::vector<std::string> drains_forgotten;

  uint32_t recommended = 0;  // as the coordinator said
  uint32_t wanted = 0;       // the advice within [min, max]
  uint32_t pool = 0;         // alive workers not being drained, plus pending launches
  uint32_t pending = 0;      // asked for, not registered yet
  uint32_t leaving = 0;      // draining, or asked to drain
};

class ScalePolicy {
 public:
  explicit ScalePolicy(ScaleConfig config) : config_(config) {}

  // Decides and takes its actions as done: a scale-up becomes pending launches, a drain a
  // worker that is leaving. Report an action that could not be run with the calls below.
  ScaleDecision Decide(const PoolObservation& observation);

  // The last scale-up's command failed: its launches are dropped and the next waits out the
  // back-off.
  void LaunchFailed(int64_t now_ms);
  // The drain of `worker_id` could not be asked for: it counts again, and no drain is tried
  // for another cool-down.
  void DrainFailed(const std::string& worker_id, int64_t now_ms);

  uint32_t consecutive_failures() const { return failures_; }
  // How long a launch waits after `failures` failures in a row.
  int64_t BackoffMs(uint32_t failures) const;

 private:
  struct Launch {
    uint32_t waiting = 0;  // of its workers, those not registered yet
    int64_t at_ms = 0;
  };

  // Registrations seen since the last look consume pending launches, oldest first.
  void MatchRegistrations(const std::vector<wire::WorkerStatus>& workers);
  uint32_t Pending() const;

  ScaleConfig config_;
  bool first_look_ = true;
  std::set<std::string> known_;          // every worker id seen, so a new one is recognized
  std::deque<Launch> launches_;          // oldest first
  std::map<std::string, int64_t> asked_to_drain_;  // id -> when
  uint32_t failures_ = 0;                // failed launches in a row
  int64_t last_failure_ms_ = 0;
  std::optional<int64_t> last_up_ms_;
  std::optional<int64_t> below_since_ms_;  // since when the advice is below the pool
  std::optional<int64_t> drain_blocked_until_ms_;
};

}  // namespace coupler::client
