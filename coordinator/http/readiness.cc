#include "coordinator/http/readiness.h"

#include <fmt/format.h>

namespace coupler::coordinator::http {

Readiness ReadinessOf(const Snapshot* s, int64_t now_wall_ms) {
  if (s == nullptr) return {false, "the event loop has not answered yet"};
  const int64_t age = now_wall_ms - s->taken_ms;
  if (age > kMaxLoopLagMs) {
    return {false, fmt::format("the event loop lags: its last answer is {} ms old (more than {} ms)",
                               age, kMaxLoopLagMs)};
  }
  if (!s->stats.store_error.empty()) {
    return {false, "dispatch is stopped: the state cannot be written (" + s->stats.store_error +
                       "); it resumes by itself once it can"};
  }
  return {true, ""};
}

}  // namespace coupler::coordinator::http
