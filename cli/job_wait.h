// Waiting for a submitted job: polls its status, shows progress (tasks done/total, rate, ETA)
// on stderr, and turns the outcome into an exit code with the failing task's error.
#pragma once

#include <optional>
#include <string>

#include "client/client.h"

namespace coupler::cli {

struct WaitOutcome {
  int exit_code = 1;  // 0 succeeded, 1 failed/cancelled/unreachable
  std::optional<wire::JobStatus> final_status;
};

WaitOutcome WaitForJob(client::Client& client, const std::string& job_id);

}  // namespace coupler::cli
