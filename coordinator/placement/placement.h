// Placement by labels: which workers a node's `requires` admits, and what to tell the user
// while none does. Pure functions over label maps, shared by loose dispatch and gangs.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace coupler::coordinator {

using Labels = std::map<std::string, std::string>;

// True when `labels` contains every key=value pair of `required` (an empty `required` admits
// every worker). Values compare exactly: "nvlink" does not match "NVLink".
bool LabelsMatch(const Labels& required, const Labels& labels);

// Whether a worker's labels advertise a fast link for a gang's all-reduce
// (interconnect=nvlink or interconnect=infiniband); ethernet or no label is not.
bool FastInterconnect(const Labels& labels);

// The Slurm job a worker runs in (its slurm_job label, set by the worker itself under Slurm);
// empty outside Slurm.
std::string SlurmJobOf(const Labels& labels);

// The ranks a gang may run on a worker: its slots, and under Slurm never more than the CPUs its
// job was given on that node (slurm_cpus, SLURM_CPUS_ON_NODE): a worker may offer more slots for
// loose tasks, but a gang's ranks spin on their CPUs and would starve each other there.
uint32_t GangSlots(uint32_t slots, const Labels& labels);

// "interconnect=infiniband,zone=a", in key order.
std::string DescribeLabels(const Labels& labels);

// The reason a node waits when no alive worker matches, e.g. "waiting for a worker with
// zone=b (2 alive workers, none match)"; empty when some worker in `alive` matches.
std::string UnmatchedReason(const Labels& required, const std::vector<const Labels*>& alive);

}  // namespace coupler::coordinator
