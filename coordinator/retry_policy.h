// RetryPolicy: whether a failed attempt runs again and how long it waits first. A failure of
// the task's own data or params (InvalidData) never runs again; any other (a command's
// non-zero exit, an I/O error, a timeout, a lost worker) waits an exponential back-off per
// task, so a flaky dependency or a full disk gets time to recover and the pool is not spun.
#pragma once

#include <cstdint>

namespace coupler::coordinator {

struct RetryPolicy {
  // The wait before the retry after a task's first failed attempt; doubled after each further
  // one, up to max_delay_ms. 0: retries start at once (the scheduler's unit tests of other
  // things, which do not want a clock).
  int64_t first_delay_ms = 0;
  int64_t max_delay_ms = 0;
};

// What the coordinator runs with: 0.5 s, 1 s, 2 s, ... capped at 30 s.
inline constexpr RetryPolicy kDefaultRetryPolicy{500, 30'000};

// May an attempt that failed with this TaskOutcome.error_code succeed if run again? False
// only for InvalidData; 0 (a failure with no code) counts as transient.
bool MayRetry(uint16_t error_code);

// The wait before the next attempt of a task that has failed `failures` times (>= 1).
int64_t RetryDelayMs(const RetryPolicy& policy, uint32_t failures);

}  // namespace coupler::coordinator
