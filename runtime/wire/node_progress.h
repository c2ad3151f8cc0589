// The latest reported step of each tight node of a job status, read from the node's folder in
// the run directory (job/step_progress.h) — by the CLI when the run directory is readable
// there, by the coordinator's HTTP threads for the page, the API and /metrics (never by its
// event loop). Nodes whose folder cannot be read are left out.
#pragma once

#include <map>
#include <string>

#include "runtime/job/step_progress.h"
#include "runtime/wire/client_messages.h"

namespace coupler::wire {

// `running_only`: only the nodes that run now (what /metrics exports, so its series stay
// bounded by the gangs the pool runs).
std::map<std::string, job::StepProgress> TightNodeProgress(const JobStatus& job,
                                                           bool running_only);

}  // namespace coupler::wire
