#include "coordinator/retry_policy.h"

#include <algorithm>

#include "runtime/status.h"

namespace coupler::coordinator {

bool MayRetry(uint16_t error_code) {
  return error_code != static_cast<uint16_t>(StatusCode::kInvalidData);
}

int64_t RetryDelayMs(const RetryPolicy& policy, uint32_t failures) {
  if (policy.first_delay_ms <= 0) return 0;
  int64_t delay = policy.first_delay_ms;
  // Doubling stops at the cap, so no shift can overflow however many attempts `retries` allows.
  for (uint32_t i = 1; i < failures && delay < policy.max_delay_ms; ++i) delay *= 2;
  return std::min(delay, std::max(policy.max_delay_ms, policy.first_delay_ms));
}

}  // namespace coupler::coordinator
