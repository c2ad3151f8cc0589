// Whether a command's non-zero exit is worth another attempt: the command's own say, as a
// Kubernetes Job's podFailurePolicy rules on exit codes. By default every exit is retried (a
// program may be flaky) except kNoRetryExitCode, which a command exits with to say "the same
// input fails the same way: do not run me again". A node may add codes (`no_retry_exit_codes`)
// or retry only some (`retry_on_exit_codes`). Signals and timeouts are not exit codes and stay
// retryable. Pure: no I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/status.h"
#include "runtime/wire/task_params.h"

namespace coupler::worker {

// sysexits' EX_DATAERR ("the input data was incorrect"): a failure another attempt repeats.
// Commands also find it in their environment as COUPLER_NO_RETRY_EXIT.
inline constexpr int kNoRetryExitCode = 65;

struct ExitCodeRule {
  std::vector<int> no_retry{kNoRetryExitCode};  // never retried (checked first)
  bool retry_only_listed = false;               // retry_on_exit_codes given:
  std::vector<int> retry_only;                  // then the only exits retried

  // Why an exit with `status` (non-zero) is not retried; nullopt when it is retried.
  std::optional<std::string> NotRetried(int status) const;
};

// The rule from an exec or mpi_exec task's params (the validator checked the codes).
Result<ExitCodeRule> ExitCodeRuleFrom(const wire::TaskParams& params);

// `failed` (a command's EndStatus) as InvalidData, which the coordinator does not retry, when
// the command exited with a status the rule says not to retry; else `failed` unchanged.
Status ApplyExitCodeRule(const ExitCodeRule& rule, bool exited, int exit_status, Status failed);

// NAME=value for the command's environment: COUPLER_NO_RETRY_EXIT=65.
std::string NoRetryExitVariable();

}  // namespace coupler::worker
