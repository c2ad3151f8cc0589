// Whether the coordinator is dispatching, as /readyz answers it and `coupler_ready` shows it.
// Alive (/healthz) is not enough for a load balancer or an alert: a coordinator whose state
// disk is full answers every probe yet sends no task, and one whose event loop is stuck in a
// long step answers late. Pure: judged from a published snapshot and the time.
#pragma once

#include <cstdint>
#include <string>

#include "coordinator/http/snapshot.h"

namespace coupler::coordinator::http {

// Longer than this between two of the event loop's answers, and the loop counts as lagging.
inline constexpr int64_t kMaxLoopLagMs = 1000;

struct Readiness {
  bool ready = false;
  std::string reason;  // why not, for the operator; empty when ready
};

// `snapshot`: the newest the loop published, or null when it has published none.
Readiness ReadinessOf(const Snapshot* snapshot, int64_t now_wall_ms);

}  // namespace coupler::coordinator::http
