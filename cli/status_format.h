// How job and worker status is shown: JSON for scripts, text for people, and the one-line
// progress display of `submit --wait` and `run`.
#pragma once

#include <string>
#include <vector>

#include "runtime/wire/client_messages.h"

namespace coupler::cli {

// {"id","name","state","tasks":{"total","queued","running","done","failed"},"attempts",
//  "error","devices":{...},"gpu_fallbacks","nodes":[{"id","state","tasks","done","attempts","error","ranks","reason"}]}
std::string JobStatusJson(const wire::JobStatus& job);
// {"jobs":[...], "coordinator":{"messages_received","messages_dropped","workers_alive","uptime_ms",
//  "queued":{"cpu_tasks","gpu_tasks","gang_ranks"},"recommended_workers"}}
std::string StatusReplyJson(const wire::StatusReply& reply);
// [{"id","host","slots","running","state","cpus","memory_bytes","labels":{k: v},
//   "gpus":[{"index","name","total_memory","free_memory"}]}]
std::string WorkersJson(const std::vector<wire::WorkerStatus>& workers);

std::string JobStatusText(const wire::JobStatus& job);
// One line per worker: id, host, state, slots, load (running/slots), GPUs, labels.
std::string WorkersText(const std::vector<wire::WorkerStatus>& workers);
// "2x NVIDIA H100 80GB HBM3 (80 GiB)", "-" for none.
std::string DescribeGpus(const std::vector<wire::GpuInfo>& gpus);
// "80 GiB", "4.5 GiB".
std::string GpuMemoryText(uint64_t bytes);
// The coordinator's lines of `coupler status`: pool, queue per hardware class, advice.
std::string CoordinatorText(const wire::CoordinatorStats& stats);

// "j-000001  1,234/5,000 tasks  24.7%  3,412 tasks/s  ETA 1.1 s"
std::string ProgressLine(const wire::JobStatus& job, double elapsed_s);

}  // namespace coupler::cli
