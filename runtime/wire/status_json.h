// The JSON form of the status records (JobStatus, StatusReply, WorkerStatus): one rendering,
// shared by the CLI's --json and the coordinator's HTTP API, so a pipeline reading either
// reads the same document.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/job/step_progress.h"
#include "runtime/util/json_writer.h"
#include "runtime/wire/client_messages.h"

namespace coupler::wire {

// Appends one job as a JSON object to `w` (for documents that hold several). `progress`, when
// given: tight nodes' latest reported steps by node id, as each node's
// "progress":{"step","time","metrics":{name: value}}.
void WriteJobStatus(json::Writer& w, const JobStatus& job,
                    const std::map<std::string, job::StepProgress>* progress = nullptr);

// {"id","name","state","tasks":{"total","queued","running","done","failed"},"attempts",
//  "error","devices":{...},"gpu_fallbacks","nodes":[{"id","state","tasks","done","attempts",
//  "error","ranks","reason","hosts"}]}
std::string JobStatusJson(const JobStatus& job,
                          const std::map<std::string, job::StepProgress>* progress = nullptr);
// {"jobs":[...], "coordinator":{"messages_received","messages_dropped","workers_alive",
//  "uptime_ms","queued":{"cpu_tasks","gpu_tasks","gang_ranks"},"recommended_workers",...,
//  "warnings":["..."]}}
std::string StatusReplyJson(const StatusReply& reply);
// [{"id","host","slots","running","state","cpus","memory_bytes","labels":{k: v},
//   "gpus":[{"index","name","total_memory","free_memory","uuid"}],
//   "gpu_usage":[{"index","utilization_percent","used_memory","total_memory", and the health
//                 readings NVML gave: "temperature_c","power_mw","power_limit_mw",
//                 "throttle_reasons","ecc_uncorrected","xid_errors","last_xid"}],
//   "gpu_fences":[{"index","reason","since_ms"}],
//   "gpu_sampling":"nvml" or why gpu_usage is empty, "warning"}]
std::string WorkersJson(const std::vector<WorkerStatus>& workers);

}  // namespace coupler::wire
