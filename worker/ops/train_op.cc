// train: a tight node's gang, run by its leader worker. The coordinator reserved the slots
// (spec.gang_hosts / gang_ranks); this launches the whole group as
//   mpirun -np RANKS [--hostfile F] <this coupler binary> train CONFIG --set ... --resume?
// (inside a Slurm allocation: `srun --mpi=pmix ... -n RANKS <coupler> train ...`, one step)
// and waits for it, so one rank dying or stalling ends the group and fails the task (retried
// from the newest checkpoint). The node's directory receives weights.npy, metrics.json and
// model.json (what evaluate needs to rebuild the network and the held-out split).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/io/atomic_file.h"
#include "runtime/io/unique_fd.h"
#include "runtime/job/param_validator.h"
#include "runtime/job/step_progress.h"
#include "runtime/ops/train_keys.h"
#include "runtime/ops/train_model.h"
#include "worker/ops/gang_launch.h"
#include "worker/ops/ops.h"
#include "worker/ops/shard_io.h"
#include "worker/ops/subprocess.h"
#include "train/config/train_config.h"

namespace coupler::worker {
namespace {

namespace fs = std::filesystem;

// The worker ends the group at the node's timeout (mpirun and every rank, with the error exec
// gives); mpirun's own --timeout, this much later, is only a backstop.
constexpr double kLauncherGraceS = 30;

// What evaluate needs beside the weights: the layer widths and the split coupler train used.
Status WriteModelInfo(const std::string& path, const train::TrainConfig& config) {
  return WriteTextFile(path, ops::ModelInfoJson({config.layers, config.label_column,
                                                 config.test_fraction, config.seed, config.data}));
}

// The first "coupler train: ..." line in stderr (each rank's error line), or "".
std::string RankError(std::string_view stderr_tail) {
  constexpr std::string_view kPrefix = "coupler train: ";
  const size_t at = stderr_tail.find(kPrefix);
  if (at == std::string_view::npos) return {};
  const size_t end = stderr_tail.find('\n', at);
  return std::string(stderr_tail.substr(at, end == std::string_view::npos ? end : end - at));
}

int64_t FileSize(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? -1 : static_cast<int64_t>(size);
}

}  // namespace

Status RunTrain(const OpContext& context, OpReport& report) {
  const wire::TaskSpec& spec = context.spec;
  const wire::TaskParams& params = spec.params;
  COUPLER_ASSIGN_OR_RETURN(const std::string config_path, params.Get<std::string>("config"));
  COUPLER_ASSIGN_OR_RETURN(const std::string data, InputPath(context, 0, "[dataset directory]"));
  COUPLER_ASSIGN_OR_RETURN(const std::string out_dir, OutputPath(context));
  const uint32_t ranks = GangRanks(spec);
  COUPLER_ASSIGN_OR_RETURN(double timeout_s, params.Get<double>("timeout"));
  if (spec.timeout_ms > 0) timeout_s = std::min(timeout_s, static_cast<double>(spec.timeout_ms) / 1e3);

  const fs::path dir(out_dir);
  std::vector<std::string> overrides = {"data=" + data,
                                        "checkpoint_dir=" + (dir / "checkpoints").string()};
  // Node params that are `coupler train` config keys go on as overrides; the rest steer the op.
  for (const ops::TrainNodeKey& key : ops::kTrainNodeKeys) {
    const auto it = params.values().find(key.name);
    if (it != params.values().end()) {
      overrides.push_back(std::string(key.name) + "=" + job::ParamToString(it->second));
    }
  }
  // Checked here, before any process starts, so a bad config is one clear error, not N.
  Result<train::TrainConfig> config = train::LoadTrainConfig(config_path, overrides);
  if (!config.ok()) return config.status();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io::ErrnoStatus("create the node directory", out_dir, ec.value());  // ENOSPC: retried
  COUPLER_RETURN_IF_ERROR(WriteModelInfo((dir / ops::kModelInfoFile).string(), *config));

  COUPLER_ASSIGN_OR_RETURN(const std::string self, CouplerBinary());
  const GangLauncherChoice launcher = ChooseGangLauncher(spec, context.gang);
  if (!launcher.note.empty() && context.logs != nullptr) context.logs->Note(launcher.note);
  std::string cmd;
  std::vector<std::string> env;
  bool rank_logs = false;
  if (launcher.srun_nodes) {
    // One Slurm step; each rank's lines reach the task's log labelled with the rank.
    const std::string hostfile = (dir / "slurm-hostfile").string();
    SrunLaunch srun = SrunGangLaunch(*launcher.srun_nodes, GangStepName(spec), hostfile);
    if (!srun.hostfile.empty()) COUPLER_RETURN_IF_ERROR(WriteTextFile(hostfile, srun.hostfile));
    cmd = "exec " + srun.command;
    env = std::move(srun.env);
    if (context.logs != nullptr) {
      context.logs->Note("coupler: the group starts as Slurm step " + GangStepName(spec) +
                         " of job " + context.gang->slurm->job_id);
    }
  } else {
    cmd = "exec mpirun --oversubscribe --bind-to none";
    if (geteuid() == 0) cmd += " --allow-run-as-root";
    cmd += " --timeout " +
           std::to_string(static_cast<int64_t>(std::ceil(timeout_s + kLauncherGraceS)));
    cmd += " -np " + std::to_string(ranks);
    // Each rank's own output in files of its own (logs/...ranks/1/rank.N/stdout), beside the
    // combined output mpirun still prints into the task's logs.
    rank_logs = context.logs != nullptr && !context.logs->rank_dir().empty();
    if (rank_logs) cmd += " --output-filename " + ShellQuote(context.logs->rank_dir());
    if (!GangIsLocal(spec)) {
      const std::string path = (dir / "hostfile").string();
      COUPLER_RETURN_IF_ERROR(WriteTextFile(path, GangHostfileText(spec, ranks)));
      cmd += " --hostfile " + ShellQuote(path);
    }
    env = GangLauncherEnv(spec, context.gang, self);
  }
  cmd += " " + ShellQuote(self) + " train " + ShellQuote(config_path);
  for (const std::string& o : overrides) cmd += " --set " + ShellQuote(o);
  const fs::path metrics = dir / "metrics.json";
  const fs::path weights = dir / "weights.npy";
  cmd += " --metrics-out " + ShellQuote(metrics.string());
  cmd += " --weights-out " + ShellQuote(weights.string());
  // One line per step where `coupler status`, the page and /metrics look (job/step_progress.h).
  cmd += " --metrics-history " + ShellQuote((dir / job::kStepsFile).string());
  // A retry continues the group from its newest checkpoint instead of starting over.
  if (spec.attempt > 0) cmd += " --resume";

  LaunchErrorWatch launch_error;
  auto result = RunOpCommand(cmd, timeout_s, context.cancel, report.kernel_ms, context.logs,
                             std::move(env),
                             [&](int stream, std::string_view d) { launch_error.Feed(stream, d); });
  // mpirun writes the rank files itself, unbounded while the group runs: a rank printing
  // without end is bounded only here, when the group has ended (the node's timeout ends it).
  if (rank_logs) TrimLogFilesUnder(context.logs->rank_dir(), context.logs->bound());
  if (!result.ok()) return result.status();
  const std::string what = launcher.srun_nodes ? "srun" : "mpirun";
  if (Status s = EndStatus(*result, timeout_s, what + " (" + std::to_string(ranks) + " ranks)");
      !s.ok()) {
    // A rank's own one-line error, or the launcher's word on a lost host, says more than
    // mpirun's banner around it.
    std::string rank_error = RankError(result->stderr_tail);
    if (!launch_error.line().empty()) rank_error = launch_error.line();
    if (result->end != ShellResult::End::kCancelled && !rank_error.empty()) {
      const std::string message(s.message());
      return Status(s.code(), message.substr(0, message.find(": ")) + ": " + rank_error);
    }
    return s;
  }
  for (const fs::path& file : {weights, metrics}) {
    const int64_t size = FileSize(file);
    if (size < 0) return Internal("the training group succeeded but wrote no " + file.string());
    report.output_paths.push_back(file.string());
    report.bytes_written += static_cast<uint64_t>(size);
  }
  report.rows_out = ranks;
  return Status::Ok();
}

}  // namespace coupler::worker
