// mpi_exec: the user's own MPI program as a tight node — the way to bring a PyTorch, Horovod
// or any mpirun-launched script under coupler. The coordinator reserved the gang's slots; the
// leader runs `command` once with {ranks} (the reserved rank count), {hostfile} (an Open MPI
// hostfile of the reserved hosts, always written), {hosts} (the same as mpirun --host wants
// it: ADDR:N,ADDR:N), {launch} (a launcher command for the ranks, the program to follow:
// `mpirun -np RANKS --hostfile F`, or inside a Slurm allocation `srun --mpi=pmix ...`, one
// step over the reserved nodes), {input} (the input datasets, shell-quoted, space-separated)
// and {output} (the node's directory, created first) replaced. The command launches its own
// ranks (usually `{launch} python train.py ...`); when the gang spans hosts it runs with
// OMPI_MCA_plm_rsh_agent pointing at `coupler gang-agent` (gang_launch.h), so Open MPI starts
// its remote daemons through the reserved workers, without ssh. Its exit status is the node's
// result, and a failure is retried as a whole, up to `retries`.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "worker/ops/gang_launch.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/subprocess.h"

namespace coupler::worker {
namespace {

constexpr std::string_view kRankLogsVariable = "COUPLER_RANK_LOGS";

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
  if (ec) return InvalidArgument(out_dir + ": cannot create the node directory: " + ec.message());
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
    }
  }
  std::string line = SubstitutePlaceholders(command, {{"ranks", std::to_string(ranks)},
                                                      {"hostfile", ShellQuote(hostfile)},
                                                      {"hosts", GangHostList(spec, ranks)},
                                                      {"launch", launch},
                                                      {"input", inputs},
                                                      {"output", ShellQuote(out_dir)}});
  // The user's own mpirun cannot be given --output-filename (Open MPI 4.1 takes it only on the
  // command line), so the folder for per-rank files is offered as $COUPLER_RANK_LOGS:
  // `mpirun --output-filename "$COUPLER_RANK_LOGS" ...` lists each rank in `coupler logs`.
  const bool rank_logs = context.logs != nullptr && !context.logs->rank_dir().empty();
  if (rank_logs) env.push_back(std::string(kRankLogsVariable) + "=" + context.logs->rank_dir());
  LaunchErrorWatch launch_error;
  auto result = RunOpCommand(std::move(line), timeout_s, context.cancel, report.kernel_ms,
                             context.logs, std::move(env),
                             [&](int stream, std::string_view d) { launch_error.Feed(stream, d); });
  // Bounded only once the group has ended: mpirun writes these files itself.
  if (rank_logs) TrimLogFilesUnder(context.logs->rank_dir(), context.logs->bound());
  if (!result.ok()) return result.status();
  if (Status s = EndStatus(*result, timeout_s, "mpi_exec (" + std::to_string(ranks) + " ranks)");
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
