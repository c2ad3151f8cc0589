#include "worker/ops/gang_launch.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <span>

#include "runtime/io/atomic_file.h"
#include "worker/ops/subprocess.h"

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDeletedSuffix = " (deleted)";

}  // namespace

uint32_t GangRanks(const wire::TaskSpec& spec) {
  if (spec.gang_ranks.empty()) return std::max<uint32_t>(spec.ranks, 1);
  return std::accumulate(spec.gang_ranks.begin(), spec.gang_ranks.end(), uint32_t{0});
}

bool GangIsLocal(const wire::TaskSpec& spec) {
  return GangHosts(spec).size() <= 1;
}

std::vector<std::pair<std::string, uint32_t>> GangHosts(const wire::TaskSpec& spec) {
  std::vector<std::pair<std::string, uint32_t>> hosts;
  for (size_t i = 0; i < spec.gang_hosts.size(); ++i) {
    const uint32_t n = i < spec.gang_ranks.size() ? spec.gang_ranks[i] : 1;
    auto same = std::find_if(hosts.begin(), hosts.end(),
                             [&](const auto& h) { return h.first == spec.gang_hosts[i]; });
    if (same != hosts.end()) {
      same->second += n;
    } else {
      hosts.emplace_back(spec.gang_hosts[i], n);
    }
  }
  return hosts;
}

std::string GangHostfileText(const wire::TaskSpec& spec, uint32_t ranks) {
  if (GangIsLocal(spec)) return "localhost slots=" + std::to_string(ranks) + "\n";
  std::string text;
  for (const auto& [host, n] : GangHosts(spec)) text += host + " slots=" + std::to_string(n) + "\n";
  return text;
}

std::string GangHostList(const wire::TaskSpec& spec, uint32_t ranks) {
  if (GangIsLocal(spec)) return "localhost:" + std::to_string(ranks);
  std::string text;
  for (const auto& [host, n] : GangHosts(spec)) {
    text += (text.empty() ? "" : ",") + host + ":" + std::to_string(n);
  }
  return text;
}

std::vector<std::string> GangLauncherEnv(const wire::TaskSpec& spec, const GangSetup* setup,
                                         const std::string& coupler_binary) {
  if (GangIsLocal(spec)) return {};
  std::vector<std::string> env;
  if (setup != nullptr) env = setup->launcher_env;
  env.push_back("COUPLER_GANG=" + spec.job_id + ":" + std::to_string(spec.task_id) + ":" +
                std::to_string(spec.attempt));
  env.push_back("COUPLER_GANG_TOKEN=" + spec.gang_token);
  env.push_back("OMPI_MCA_plm_rsh_agent=" + coupler_binary + " gang-agent");
  // Every daemon is started by mpirun's own agent, which holds the gang's secret; a tree
  // spawn would start agents from the remote daemons instead.
  env.push_back("OMPI_MCA_plm_rsh_no_tree_spawn=1");
  // Without it the daemons fork into the background and their launcher returns at once; the
  // worker running a daemon treats its command's end as the daemon's.
  env.push_back("OMPI_MCA_orte_leave_session_attached=1");
  return env;
}

Result<std::vector<std::pair<std::string, uint32_t>>> GangSlurmNodes(const wire::TaskSpec& spec,
                                                                     const SlurmSteps& slurm) {
  const auto hosts = GangHosts(spec);
  if (hosts.size() <= 1) {
    // All on the leader's machine (or a gang without a reservation): the leader's node.
    return std::vector<std::pair<std::string, uint32_t>>{{slurm.node, GangRanks(spec)}};
  }
  std::vector<std::pair<std::string, uint32_t>> nodes;
  for (const auto& [address, ranks] : hosts) {
    const auto it = std::find_if(slurm.node_of_address.begin(), slurm.node_of_address.end(),
                                 [&](const auto& entry) { return entry.first == address; });
    if (it == slurm.node_of_address.end()) {
      return NotFound("gang host " + address + " is no node of Slurm job " + slurm.job_id);
    }
    auto same = std::find_if(nodes.begin(), nodes.end(),
                             [&](const auto& n) { return n.first == it->second; });
    if (same != nodes.end()) {
      same->second += ranks;
    } else {
      nodes.emplace_back(it->second, ranks);
    }
  }
  return nodes;
}

SrunLaunch SrunGangLaunch(const std::vector<std::pair<std::string, uint32_t>>& nodes,
                          const std::string& step_name, const std::string& hostfile_path) {
  uint32_t ranks = 0;
  std::string nodelist;
  for (const auto& [node, n] : nodes) {
    ranks += n;
    nodelist += (nodelist.empty() ? "" : ",") + node;
  }
  SrunLaunch launch;
  // --overlap: the worker's own step holds the node's CPUs (and GPUs); the coordinator has
  // already reserved the slots, so the ranks share them rather than wait for them.
  // --overcommit: a worker may offer more slots than Slurm gave it CPUs.
  // --kill-on-bad-exit: one rank failing ends the step, as mpirun ends its group.
  // --label: the ranks' lines arrive in the task's log prefixed "R: ".
  launch.command = "srun --mpi=pmix --overlap --overcommit --kill-on-bad-exit=1 --label"
                   " --unbuffered --job-name=" + ShellQuote(step_name) +
                   " --nodes=" + std::to_string(nodes.size()) +
                   " --ntasks=" + std::to_string(ranks) + " --nodelist=" + ShellQuote(nodelist);
  if (nodes.size() == 1) {
    launch.command += " --distribution=block";
  } else {
    // One line per rank naming its node: the reservation's layout, exactly.
    launch.command += " --distribution=arbitrary";
    for (const auto& [node, n] : nodes) {
      for (uint32_t i = 0; i < n; ++i) launch.hostfile += node + "\n";
    }
    launch.env.push_back("SLURM_HOSTFILE=" + hostfile_path);
  }
  // The worker's own step sets these for itself; the gang's step must not inherit them.
  launch.command = "env -u SLURM_NTASKS -u SLURM_NPROCS -u SLURM_NTASKS_PER_NODE "
                   "-u SLURM_TASKS_PER_NODE -u SLURM_CPUS_PER_TASK -u SLURM_DISTRIBUTION "
                   "-u SLURM_CPU_BIND " + launch.command;
  return launch;
}

GangLauncherChoice ChooseGangLauncher(const wire::TaskSpec& spec, const GangSetup* setup) {
  GangLauncherChoice choice;
  if (setup == nullptr || !setup->slurm) return choice;
  auto nodes = GangSlurmNodes(spec, *setup->slurm);
  if (nodes.ok()) {
    choice.srun_nodes = std::move(*nodes);
  } else {
    choice.note = std::string(nodes.status().message()) + ": starting the gang with mpirun";
  }
  return choice;
}

std::string GangStepName(const wire::TaskSpec& spec) {
  return "coupler." + spec.job_id + "." + std::to_string(spec.task_id) + ".a" +
         std::to_string(spec.attempt);
}

void LaunchErrorWatch::Feed(int stream, std::string_view data) {
  if (stream != 2 || !line_.empty()) return;
  constexpr size_t kMaxLine = 4096;
  for (const char c : data) {
    if (c != '\n') {
      if (partial_.size() < kMaxLine) partial_ += c;
      continue;
    }
    if (partial_.starts_with("coupler: lost ") || partial_.starts_with("coupler gang-agent: ") ||
        partial_.starts_with("coupler: launch for ")) {
      line_ = std::move(partial_);
      return;
    }
    partial_.clear();
  }
}

Result<std::string> CouplerBinary() {
  std::error_code ec;
  std::string self = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) return Internal("cannot find the running coupler binary: " + ec.message());
  if (!self.ends_with(kDeletedSuffix) || ::access(self.c_str(), X_OK) == 0) return self;
  const std::string path = self.substr(0, self.size() - kDeletedSuffix.size());
  if (::access(path.c_str(), X_OK) != 0) {
    return NotFound("the coupler binary this worker runs was deleted from " + path +
                    " and nothing executable is there now: reinstall it or restart the worker");
  }
  return path;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span(text))};
  return io::WriteFileAtomic(path, parts, /*durable=*/false);
}

std::string SubstitutePlaceholders(
    std::string_view command, const std::vector<std::pair<std::string_view, std::string>>& values) {
  std::string out;
  size_t pos = 0;
  while (pos < command.size()) {
    const size_t open = command.find('{', pos);
    out += command.substr(pos, open - pos);
    if (open == std::string_view::npos) break;
    const size_t close = command.find('}', open);
    const std::string_view name =
        close == std::string_view::npos ? "" : command.substr(open + 1, close - open - 1);
    const auto value = std::find_if(values.begin(), values.end(),
                                    [&](const auto& v) { return !name.empty() && v.first == name; });
    if (value != values.end()) {
      out += value->second;
      pos = close + 1;
    } else {
      out += '{';
      pos = open + 1;
    }
  }
  return out;
}

}  // namespace coupler::worker
