// How job and worker status is shown to people, and the one-line progress display of
// `submit --wait` and `run`. The JSON for scripts is runtime/wire/status_json.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/job/step_progress.h"
#include "runtime/wire/client_messages.h"

namespace coupler::cli {

// One job in full: its counts, how long it has run (`now_ms`: the wall clock, for a job still
// running), its nodes.
// `progress`: tight nodes' latest reported step, by node id (job/step_progress.h).
std::string JobStatusText(const wire::JobStatus& job, int64_t now_ms,
                          const std::map<std::string, job::StepProgress>& progress = {});
// One line per job (id, name, state, done/total, running, prefetched, queued, duration),
// in the order given; `more`: jobs left out by --limit, told as a last line.
std::string JobListText(const std::vector<wire::JobStatus>& jobs, int64_t now_ms, bool more);
// "1.2 s", "3 min 04 s", "2 h 05 min": from submission to finish, or to `now_ms` while running;
// "-" when the job's times are unknown.
std::string JobDuration(const wire::JobStatus& job, int64_t now_ms);
// What `coupler run` and `submit --wait` print when the job has ended: its counts, devices and
// nodes, and `wall_s`, the time the client waited. Not the job's error: they print that to
// stderr (job_wait.h); a node's own error other than the job's goes under its line.
std::string JobSummaryText(const wire::JobStatus& job, double wall_s);
// One line per worker: id, host, state, slots, running, prefetched, GPUs, labels. Under each
// row, a line per GPU sample ("gpu 0: 37% busy, 12.5 GiB of 80 GiB used"), or why a GPU worker
// has none ("gpu utilization: no NVML: ..."), and its warning if any.
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

// Whether a node's error is the job's error ("node 'ID': " and that node's error, as the
// coordinator words a failed job): said once, as the job's, not again on the node's line.
bool IsJobError(const wire::JobStatus& job, const wire::NodeStatus& node);

// "j-000001  1,234/5,000 tasks  24.7%  3,412 tasks/s  ETA 1.1 s"
std::string ProgressLine(const wire::JobStatus& job, double elapsed_s);

}  // namespace coupler::cli
