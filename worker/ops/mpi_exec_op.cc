// mpi_exec: the user's own MPI program as a tight node — the way to bring a PyTorch, Horovod
// or any mpirun-launched script under coupler. The coordinator reserved the gang's slots; the
// leader runs `command` once with {ranks} (the reserved rank count), {hostfile} (an Open MPI
// hostfile of the reserved hosts, always written), {hosts} (the same as mpirun --host wants
// it: ADDR:N,ADDR:N), {launch} (a launcher command for the ranks, the program to follow:
// `mpirun -np RANKS --hostfile F`, or inside a Slurm allocation `srun --mpi=pmix ...`, one
// step over the reserved nodes), {input} (the input datasets, shell-quoted, space-separated)
// and {output} (the node's directory, created first) replaced; for torch.distributed and other
// programs that rendezvous over TCP, also {master_addr} (the leader's address), {master_port}
// (a port free on the leader, fresh for each attempt), {job}, {node} and {attempt}. The
// command launches its own
// ranks (usually `{launch} python train.py ...`); when the gang spans hosts it runs with
// OMPI_MCA_plm_rsh_agent pointing at `coupler gang-agent` (gang_launch.h), so Open MPI starts
// its remote daemons through the reserved workers, without ssh. Its exit status is the node's
// result, and a failure is retried as a whole, up to `retries`.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>

#include "runtime/io/unique_fd.h"
#include "worker/ops/exit_code_rule.h"
#include "worker/ops/gang_launch.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/subprocess.h"

namespace coupler::worker {
namespace {

constexpr std::string_view kRankLogsVariable = "COUPLER_RANK_LOGS";

// Where the ranks meet ({master_addr}): the leader runs rank 0, and gang_hosts[0] is the
// address it advertises, which the other hosts reach it at. A gang on one host meets on
// loopback, which needs no route and no name for the host; so does a task without a
// reservation (a tight op forced loose), all of whose ranks run here.
std::string MasterAddress(const wire::TaskSpec& spec) {
  if (spec.gang_hosts.empty() || GangIsLocal(spec)) return "127.0.0.1";
  return spec.gang_hosts.front();
}

// {job} and {node} as they are: job ids (j-000012) and node ids (letters, digits, '_', '-',
// '.') need no quoting, and unquoted they compose into one word (`--name {job}-{node}`) and
// read the same inside the command's own double quotes. Anything else is quoted.
std::string NameWord(const std::string& name) {
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
  return plain ? name : ShellQuote(name);
}

// Ports this process handed out last: the kernel may give a just-closed port to the next
// bind to port 0, so without this memory two gangs this worker leads at once, or an attempt
// and its retry, could be told the same port.
class RecentPorts {
 public:
  bool Take(uint16_t port) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::find(ports_.begin(), ports_.end(), port) != ports_.end()) return false;
    ports_[next_++ % ports_.size()] = port;
    return true;
  }

 private:
  std::mutex mutex_;
  std::array<uint16_t, 64> ports_{};
  size_t next_ = 0;
};

// {master_port}: a TCP port free on every address of the leader, found by binding port 0 and
// closing the socket again. This leaves a race: between the close and rank 0's own bind, any
// process on the host may take the port. It is accepted because the window is the program's
// start-up (the kernel spreads port-0 binds over its whole ephemeral range, so a just-freed
// port is rarely the next one given), and losing it costs one failed attempt (rank 0 cannot
// bind), which the node's `retries` repeat with a new port. Holding the port open for the
// program instead would need it to bind with SO_REUSEPORT too, which a user's program cannot
// be made to do.
Result<uint16_t> FreeMasterPort() {
  static RecentPorts recent;
  for (int tries = 0; tries < 100; ++tries) {
    uint16_t port = 0;
    {
      const io::UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (!fd.valid()) return Unavailable(std::string("socket: ") + std::strerror(errno));
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_ANY);
      addr.sin_port = 0;
      socklen_t len = sizeof(addr);
      if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
          ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        return Unavailable(std::string("no free port for {master_port}: ") +
                           std::strerror(errno));
      }
      port = ntohs(addr.sin_port);
    }  // closed here: the port is the program's to bind from now on
    if (recent.Take(port)) return port;
  }
  return Unavailable("no free port for {master_port}: the kernel kept handing out recent ones");
}

// The python/ folder of the tree this coupler binary was built in (build/bin/coupler ->
// python/), or "" when there is none beside it.
std::string PythonModulesDir(const std::string& binary) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(binary).parent_path().parent_path().parent_path() / "python";
  return fs::is_regular_file(dir / "coupler_torch.py", ec) ? dir.lexically_normal().string() : "";
}

}  // namespace

Status RunMpiExec(const OpContext& context, OpReport& report) {
  const wire::TaskSpec& spec = context.spec;
  COUPLER_ASSIGN_OR_RETURN(const std::string command, spec.params.Get<std::string>("command"));
  COUPLER_ASSIGN_OR_RETURN(const std::string out_dir, OutputPath(context));
  COUPLER_ASSIGN_OR_RETURN(double timeout_s, spec.params.Get<double>("timeout"));
  if (spec.timeout_ms > 0) {
    timeout_s = std::min(timeout_s, static_cast<double>(spec.timeout_ms) / 1e3);
  }
  const uint32_t ranks = GangRanks(spec);

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return io::ErrnoStatus("create the node directory", out_dir, ec.value());  // ENOSPC: retried
  const std::string hostfile = (std::filesystem::path(out_dir) / "hostfile").string();
  COUPLER_RETURN_IF_ERROR(WriteTextFile(hostfile, GangHostfileText(spec, ranks)));

  std::string inputs;
  for (const std::string& path : spec.input_paths) {
    inputs += (inputs.empty() ? "" : " ") + ShellQuote(path);
  }
  if (inputs.empty()) inputs = "''";

  COUPLER_ASSIGN_OR_RETURN(const std::string self, CouplerBinary());
  std::vector<std::string> env = GangLauncherEnv(spec, context.gang, self);
  std::string launch;
  if (command.find("{launch}") != std::string::npos) {
    const GangLauncherChoice launcher = ChooseGangLauncher(spec, context.gang);
    if (!launcher.note.empty() && context.logs != nullptr) context.logs->Note(launcher.note);
    if (launcher.srun_nodes) {
      const std::string path = (std::filesystem::path(out_dir) / "slurm-hostfile").string();
      SrunLaunch srun = SrunGangLaunch(*launcher.srun_nodes, GangStepName(spec), path);
      if (!srun.hostfile.empty()) COUPLER_RETURN_IF_ERROR(WriteTextFile(path, srun.hostfile));
      launch = srun.command;
      env.insert(env.end(), srun.env.begin(), srun.env.end());
      if (context.logs != nullptr) {
        context.logs->Note("coupler: {launch} starts the ranks as Slurm step " +
                           GangStepName(spec) + " of job " + context.gang->slurm->job_id);
      }
    } else {
      launch = "mpirun -np " + std::to_string(ranks) + " --hostfile " + ShellQuote(hostfile);
      if (geteuid() == 0) launch += " --allow-run-as-root";
      // Each rank's output in files of its own (logs/...ranks/1/rank.N/stdout, which `coupler
      // logs` lists), beside the combined output mpirun still prints into the task's logs.
      if (context.logs != nullptr && !context.logs->rank_dir().empty()) {
        launch += " --output-filename " + ShellQuote(context.logs->rank_dir());
      }
    }
  }
  // A rendezvous for the group's own process group (torch.distributed's, gloo's, NCCL's), as
  // {master_addr}/{master_port} and in the ranks' environment with the node's folder, where
  // python/coupler_torch.py reads them.
  COUPLER_ASSIGN_OR_RETURN(const uint16_t port, FreeMasterPort());
  const std::string master_port = std::to_string(port);
  std::vector<std::string> rank_env = {"COUPLER_NODE_DIR=" + out_dir,
                                       "COUPLER_MASTER_ADDR=" + MasterAddress(spec),
                                       "COUPLER_MASTER_PORT=" + master_port};
  // coupler's Python modules (python/coupler_torch.py) importable by the ranks as they are.
  if (const std::string python = PythonModulesDir(self); !python.empty()) {
    const char* existing = std::getenv("PYTHONPATH");
    rank_env.push_back("PYTHONPATH=" + python +
                       (existing != nullptr && *existing != '\0' ? ":" + std::string(existing) : ""));
  }
  env.insert(env.end(), rank_env.begin(), rank_env.end());
  // mpirun hands its environment to the ranks it starts on its own host only: -x carries these
  // to the other hosts' ranks too (srun exports the whole environment by itself).
  if (launch.rfind("mpirun ", 0) == 0) {
    for (const std::string& entry : rank_env) launch += " -x " + entry.substr(0, entry.find('='));
  }
  std::string line = SubstitutePlaceholders(command, {{"ranks", std::to_string(ranks)},
                                                      {"hostfile", ShellQuote(hostfile)},
                                                      {"hosts", GangHostList(spec, ranks)},
                                                      {"launch", launch},
                                                      {"input", inputs},
                                                      {"output", ShellQuote(out_dir)},
                                                      {"master_addr", MasterAddress(spec)},
                                                      {"master_port", master_port},
                                                      {"job", NameWord(spec.job_id)},
                                                      {"node", NameWord(spec.node_id)},
                                                      {"attempt", std::to_string(spec.attempt)}});
  // The user's own mpirun cannot be given --output-filename (Open MPI 4.1 takes it only on the
  // command line), so the folder for per-rank files is offered as $COUPLER_RANK_LOGS:
  // `mpirun --output-filename "$COUPLER_RANK_LOGS" ...` lists each rank in `coupler logs`.
  // {launch} passes it itself.
  const bool rank_logs = context.logs != nullptr && !context.logs->rank_dir().empty();
  if (rank_logs) env.push_back(std::string(kRankLogsVariable) + "=" + context.logs->rank_dir());
  env.push_back(NoRetryExitVariable());
  COUPLER_ASSIGN_OR_RETURN(const ExitCodeRule exit_rule, ExitCodeRuleFrom(spec.params));
  LaunchErrorWatch launch_error;
  auto result = RunOpCommand(std::move(line), timeout_s, context.cancel, report.kernel_ms,
                             context.logs, std::move(env),
                             [&](int stream, std::string_view d) { launch_error.Feed(stream, d); });
  // Bounded only once the group has ended: mpirun writes these files itself.
  if (rank_logs) TrimLogFilesUnder(context.logs->rank_dir(), context.logs->bound());
  if (!result.ok()) return result.status();
  if (Status s = ApplyExitCodeRule(
          exit_rule, result->end == ShellResult::End::kExited, result->exit_status,
          EndStatus(*result, timeout_s, "mpi_exec (" + std::to_string(ranks) + " ranks)"));
      !s.ok()) {
    // The launcher's word on a lost host says more than Open MPI's banner after it.
    if (launch_error.line().empty() || result->end == ShellResult::End::kCancelled) return s;
    const std::string message(s.message());
    return Status(s.code(), message.substr(0, message.find(": ")) + ": " + launch_error.line());
  }
  report.output_paths.push_back(out_dir);
  report.rows_out = ranks;
  return Status::Ok();
}

}  // namespace coupler::worker
