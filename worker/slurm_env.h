// A worker started inside a Slurm allocation (by `srun` in scripts/slurm/coupler-pool.sbatch,
// or as the batch step of scripts/slurm/coupler-workers.sbatch) takes what it offers from the
// allocation rather than from the whole machine: its CPUs, its GPUs, labels naming its
// partition and node, and it starts the gangs it leads as steps of the allocation.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/status.h"
#include "worker/ops/gang_launch.h"

namespace coupler::worker {

// The allocation as Slurm describes it in the environment of a step or batch script.
struct SlurmAllocation {
  std::string job_id;      // SLURM_JOB_ID
  std::string node;        // SLURMD_NODENAME
  std::string partition;   // SLURM_JOB_PARTITION
  std::string nodelist;    // SLURM_JOB_NODELIST, compressed (node[1-4])
  uint32_t cpus_on_node = 0;             // SLURM_CPUS_ON_NODE
  std::optional<uint32_t> gpus_on_node;  // SLURM_GPUS_ON_NODE (set only when GPUs were asked)
};

// Reads the variables; nullopt outside Slurm (no SLURM_JOB_ID or no SLURMD_NODENAME).
// `getenv` is std::getenv in the worker, a table in tests.
using EnvLookup = std::function<const char*(const char*)>;
std::optional<SlurmAllocation> DetectSlurm(const EnvLookup& getenv);

// "infiniband" when the kernel lists an InfiniBand (or RoCE) device, else "" (unknown).
std::string DetectInterconnect();

// What the worker offers, from the allocation, where the operator said nothing:
// - slots: the allocation's CPUs on this node (`slots` 0 means unset);
// - gpus: the GPUs Slurm gave it, as ordinals of the devices it sees (Slurm sets
//   CUDA_VISIBLE_DEVICES to them); "none" when it gave none — GPUs on the node that the job
//   did not ask for belong to other jobs;
// - labels slurm_partition, slurm_node, slurm_job, and interconnect=infiniband when the
//   node has InfiniBand devices (/sys/class/infiniband); set ones are kept.
struct SlurmDefaults {
  uint32_t slots = 0;
  std::string gpus;
  std::map<std::string, std::string> labels;
};
SlurmDefaults ApplySlurmDefaults(const SlurmAllocation& slurm, SlurmDefaults given,
                                 const std::string& interconnect = DetectInterconnect());

// How `--gang-launcher` chooses: auto is srun inside an allocation, mpirun outside.
enum class GangLauncher : uint8_t { kAuto, kMpirun, kSrun };
Result<GangLauncher> ParseGangLauncher(const std::string& text);

// The allocation's nodes by address, for starting gangs as its steps: `scontrol show
// hostnames` expands the node list, each name resolves to its addresses, and this worker's
// advertised address is its own node's whatever the resolver says.
Result<SlurmSteps> ResolveSlurmSteps(const SlurmAllocation& slurm, const std::string& advertised);

}  // namespace coupler::worker
