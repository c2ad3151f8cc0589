// What the leader of a tight node's gang needs to start it: how many ranks the coordinator
// reserved, whether they are all on this machine, an Open MPI hostfile for the reserved hosts
// (addresses), and the environment that points mpirun's remote launcher at coupler's own
// (`coupler gang-agent`, no ssh). Shared by the train and mpi_exec ops, so both launch a gang
// alike.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"

namespace coupler::worker {

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

// NAME=VALUE pairs for the gang's mpirun: the worker's `launcher_env` (how to reach the
// coordinator), the gang's attempt and secret (COUPLER_GANG, COUPLER_GANG_TOKEN), and Open
// MPI's remote launcher set to `<coupler> gang-agent` (OMPI_MCA_plm_rsh_agent), launched from
// mpirun itself (no tree spawn) with the daemons kept in the foreground (their launcher
// stays alive while they run). Empty for a local gang: nothing is launched remotely.
std::vector<std::string> GangLauncherEnv(const wire::TaskSpec& spec,
                                         const std::vector<std::string>* launcher_env,
                                         const std::string& coupler_binary);

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
