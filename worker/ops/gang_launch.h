// What the leader of a tight node's gang needs to start it: how many ranks the coordinator
// reserved, whether they are all on this machine, an Open MPI hostfile for the reserved hosts
// (addresses), and either the environment that points mpirun's remote launcher at coupler's
// own (`coupler gang-agent`, no ssh) or, inside a Slurm allocation, the `srun --mpi=pmix` step
// that starts the ranks on the allocation's nodes. Shared by the train and mpi_exec ops, so
// both launch a gang alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::worker {

// How a worker inside a Slurm allocation starts its gangs: as steps of that allocation
// (`srun --mpi=pmix`), so Slurm tracks, signals and accounts the ranks like any step.
struct SlurmSteps {
  std::string job_id;  // SLURM_JOB_ID
  std::string node;    // this worker's node (SLURMD_NODENAME)
  // The allocation's nodes by the addresses they resolve to: a gang host (an address) runs
  // on the node it is an address of. This worker's own advertised address maps to `node`.
  std::vector<std::pair<std::string, std::string>> node_of_address;
};

// What every gang a worker leads starts with.
struct GangSetup {
  // NAME=VALUE pairs a gang leader's mpirun gets, so the launcher hook it starts for remote
  // hosts (coupler gang-agent) reaches the coordinator as this worker does.
  std::vector<std::string> launcher_env;
  // Set when gangs start as Slurm steps (worker/slurm_env.h); unset: mpirun.
  std::optional<SlurmSteps> slurm;
};

// The ranks reserved for the gang (the sum of spec.gang_ranks), or its declared spec.ranks
// (at least 1) when the task carries no reservation (a tight op forced loose with ranks: 1).
uint32_t GangRanks(const wire::TaskSpec& spec);

// Every reserved host is the leader's (gang_hosts are addresses, the leader's first; several
// workers on one address are one host): the group starts with plain `-np`, no hostfile and
// no remote launch.
bool GangIsLocal(const wire::TaskSpec& spec);

// The reserved hosts with the ranks each runs, leader first, workers on one address merged.
std::vector<std::pair<std::string, uint32_t>> GangHosts(const wire::TaskSpec& spec);

// "ADDR slots=N" per reserved host; "localhost slots=RANKS" when the gang is local.
std::string GangHostfileText(const wire::TaskSpec& spec, uint32_t ranks);
// "ADDR:N,ADDR:N" (mpirun --host); "localhost:RANKS" when the gang is local.
std::string GangHostList(const wire::TaskSpec& spec, uint32_t ranks);

// NAME=VALUE pairs for the gang's mpirun: the setup's `launcher_env` (how to reach the
// coordinator), the gang's attempt and secret (COUPLER_GANG, COUPLER_GANG_TOKEN), and Open
// MPI's remote launcher set to `<coupler> gang-agent` (OMPI_MCA_plm_rsh_agent), launched from
// mpirun itself (no tree spawn) with the daemons kept in the foreground (their launcher
// stays alive while they run). Empty for a local gang: nothing is launched remotely.
std::vector<std::string> GangLauncherEnv(const wire::TaskSpec& spec, const GangSetup* setup,
                                         const std::string& coupler_binary);

// The Slurm nodes the gang's ranks run on, with their rank counts, leader first. NotFound
// names the first host that is no node of this worker's allocation (a worker of another
// Slurm job, or outside Slurm): such a gang starts through mpirun and coupler's hook instead.
Result<std::vector<std::pair<std::string, uint32_t>>> GangSlurmNodes(const wire::TaskSpec& spec,
                                                                     const SlurmSteps& slurm);

// The command that starts the gang's ranks as one Slurm step, to be followed by the rank
// program and its arguments: `srun --mpi=pmix --overlap ...` with one rank per reserved slot
// on each node, every rank's output labelled with its rank, and the whole step ended when one
// rank fails. `env` goes to srun's environment; `hostfile` (SLURM_HOSTFILE, one node per
// rank) must be written to `hostfile_path` first when it is not empty: it lays out the ranks
// when they spread over several nodes.
struct SrunLaunch {
  std::string command;
  std::vector<std::string> env;
  std::string hostfile;
};
SrunLaunch SrunGangLaunch(const std::vector<std::pair<std::string, uint32_t>>& nodes,
                          const std::string& step_name, const std::string& hostfile_path);

// A gang's launcher chosen for one attempt: srun inside an allocation whose nodes hold every
// reserved host, else mpirun (with coupler's hook when the gang spans hosts). `note` says why
// srun was passed over (for the task's log), empty otherwise.
struct GangLauncherChoice {
  std::optional<std::vector<std::pair<std::string, uint32_t>>> srun_nodes;
  std::string note;
};
GangLauncherChoice ChooseGangLauncher(const wire::TaskSpec& spec, const GangSetup* setup);

// The step name a gang's srun gives it (`scontrol show step` lists it): coupler.JOB.TASK.aN.
std::string GangStepName(const wire::TaskSpec& spec);

// Watches a gang's mpirun output for the first line the launcher hook wrote about a lost or
// refused host ("coupler: lost 10.0.0.7: ..." or "coupler gang-agent: ..."). Open MPI follows
// it with a long banner that pushes it out of the kept stderr tail, yet it is the reason.
class LaunchErrorWatch {
 public:
  void Feed(int stream, std::string_view data);
  const std::string& line() const { return line_; }

 private:
  std::string partial_;  // the stderr line being read
  std::string line_;
};

// The coupler binary for the ranks and the launcher hook to run: this process's own. When it
// was replaced on disk (an upgrade renamed a new build over it), /proc/self/exe names the old
// file with " (deleted)"; the file now at that path is used.
Result<std::string> CouplerBinary();

// Writes `text` to `path` atomically (not fsync'd: it is rebuilt on a retry).
Status WriteTextFile(const std::string& path, const std::string& text);

// `command` with each {name} of `values` replaced by its text; other braces are left as
// written (the job validator has already refused unknown placeholders).
std::string SubstitutePlaceholders(std::string_view command,
                                   const std::vector<std::pair<std::string_view, std::string>>& values);

}  // namespace coupler::worker
