// How job and worker status is shown to people, and the one-line progress display of
// `submit --wait` and `run`. The JSON for scripts is runtime/wire/status_json.h.
#pragma once

#include <string>
#include <vector>

#include "runtime/wire/client_messages.h"

namespace coupler::cli {

std::string JobStatusText(const wire::JobStatus& job);
// One line per worker: id, host, state, slots, load (running/slots), GPUs, labels.
// Under each row, a line per GPU sample ("gpu 0: 37% busy, 12.5 GiB of 80 GiB used"), or why a
// GPU worker has none ("gpu utilization: no NVML: ..."), and its warning if any.
std::string WorkersText(const std::vector<wire::WorkerStatus>& workers);
// The lines WorkersText adds under one worker's row.
std::string GpuUsageLines(const wire::WorkerStatus& worker);
// "2x NVIDIA H100 80GB HBM3 (80 GiB)", "-" for none.
std::string DescribeGpus(const std::vector<wire::GpuInfo>& gpus);
// "80 GiB", "4.5 GiB".
std::string GpuMemoryText(uint64_t bytes);
// The coordinator's lines of `coupler status`: pool, queue per hardware class, advice, and a
// "warning: ..." line per standing warning.
std::string CoordinatorText(const wire::CoordinatorStats& stats);

// "j-000001  1,234/5,000 tasks  24.7%  3,412 tasks/s  ETA 1.1 s"
std::string ProgressLine(const wire::JobStatus& job, double elapsed_s);

}  // namespace coupler::cli
