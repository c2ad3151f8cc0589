#include "runtime/wire/node_progress.h"

namespace coupler::wire {

std::map<std::string, job::StepProgress> TightNodeProgress(const JobStatus& job,
                                                           bool running_only) {
  std::map<std::string, job::StepProgress> out;
  if (job.workdir.empty()) return out;
  for (const NodeStatus& node : job.nodes) {
    if (node.ranks == 0 || (running_only && node.state != job::NodePhase::kRunning)) continue;
    if (auto progress = job::ReadLatestStep(job.workdir + "/" + node.id)) out[node.id] = *progress;
  }
  return out;
}

}  // namespace coupler::wire
