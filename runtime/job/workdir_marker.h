// The shared-filesystem check. Like Slurm, coupler needs a job's inputs and workdir on a
// filesystem every worker sees (NFS, Lustre, ...). At admission the coordinator writes a marker
// holding a fresh token into the workdir; before a worker runs its first task of the job it
// reads the marker back. A worker that cannot (another host's private /tmp, a missing mount)
// refuses the job's tasks with a clear reason instead of writing outputs nobody else sees.
#pragma once

#include <string>

#include "runtime/status.h"

namespace coupler::job {

// WORKDIR/.coupler-job-<JOB>: the one place that names the marker.
std::string WorkdirMarkerPath(const std::string& workdir, const std::string& job_id);

// Creates the workdir if needed and writes the marker (atomically). An error names the path:
// the coordinator itself must see the workdir.
Status WriteWorkdirMarker(const std::string& workdir, const std::string& job_id,
                          const std::string& token);

// Unavailable "workdir W not visible on host ADDR: coupler needs a shared filesystem (...)"
// when the marker is missing or holds another token; OK when it holds `token`.
Status CheckWorkdirMarker(const std::string& workdir, const std::string& job_id,
                          const std::string& token, const std::string& host_address);

}  // namespace coupler::job
