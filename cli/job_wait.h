// Waiting for a submitted job: polls its status, shows progress (tasks done/total, rate, ETA)
// on stderr, and turns the outcome into an exit code with the failing task's error.
#pragma once

#include <optional>
#include <string>

#include "client/client.h"
#include "runtime/job/job_graph.h"

namespace coupler::cli {

struct WaitOutcome {
  int exit_code = 1;  // 0 succeeded, 1 failed/cancelled/unreachable
  std::optional<wire::JobStatus> final_status;
};

WaitOutcome WaitForJob(client::Client& client, const std::string& job_id);

// After a job succeeded: the accuracy each evaluate node of `graph` wrote into the run directory
// `run_dir` ("eval: held-out accuracy 0.9889 (356/360 rows)"), as `coupler run` and
// `coupler submit --wait` end. `quiet_if_unreadable`: a client on another machine may not see
// the run directory; it then prints nothing rather than a complaint.
void PrintAccuracy(const job::JobGraph& graph, const std::string& run_dir,
                   bool quiet_if_unreadable = false);

}  // namespace coupler::cli
