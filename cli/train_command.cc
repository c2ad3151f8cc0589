// `coupler train CONFIG`: one rank of a data-parallel group, launched as
// `mpirun -np N coupler train CONFIG`. Only parses its arguments: train/rank.h assembles and
// runs the rank.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "runtime/util/byte_size.h"
#include "train/rank.h"

namespace coupler::cli {
namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  bool resume = false;
  std::string resume_from;
  bool force = false;
  std::string device_memory_limit;
  double collective_timeout_s = 300;
  std::string metrics_out;
  std::string metrics_history;
  std::string weights_out;
  std::string grad_wire = "fp32";
  std::string device = "auto";  // auto, cpu or cuda
  std::string inject_inf_grad;  // "STEP" or "FIRST-LAST"
  int64_t stop_after_steps = -1;
  bool explicit_log_level = false;
};

Status ParseOptions(const TrainArgs& args, train::TrainerOptions* options) {
  if (!args.device_memory_limit.empty()) {
    auto limit = util::ParseByteSize(args.device_memory_limit);
    if (!limit.ok()) return limit.status().WithContext("--device-memory-limit");
    options->device_memory_limit = *limit;
  }
  if (args.grad_wire == "fp16") {
    options->wire = ElementType::kFloat16;
  } else if (args.grad_wire == "bf16") {
    options->wire = ElementType::kBFloat16;
  } else if (args.grad_wire != "fp32") {
    return InvalidArgument("--grad-wire must be fp32, fp16 or bf16, not '" + args.grad_wire + "'");
  }
  if (!args.inject_inf_grad.empty()) {
    const std::string& text = args.inject_inf_grad;
    const size_t dash = text.find('-');
    try {
      options->inject_inf_first = std::stoll(text.substr(0, dash));
      options->inject_inf_last =
          dash == std::string::npos ? options->inject_inf_first : std::stoll(text.substr(dash + 1));
    } catch (const std::exception&) {
      return InvalidArgument("--inject-inf-grad wants STEP or FIRST-LAST, not '" + text + "'");
    }
  }
  if (args.collective_timeout_s <= 0) {
    return InvalidArgument("--collective-timeout must be a positive number of seconds");
  }
  if (args.force && args.resume_from.empty()) {
    return InvalidArgument("--force goes with --resume-from FILE (it takes that checkpoint "
                           "although another run wrote it)");
  }
  options->resume = args.resume || !args.resume_from.empty();
  options->resume_from = args.resume_from;
  options->force = args.force;
  options->stop_after_steps = args.stop_after_steps;
  return Status::Ok();
}

static_assert(kExitOk == train::kRankExitOk && kExitFailure == train::kRankExitFailure &&
              kExitBadInput == train::kRankExitBadInput);

Result<train::RankOptions> ParseRankOptions(const TrainArgs& args) {
  train::RankOptions options;
  COUPLER_RETURN_IF_ERROR(ParseOptions(args, &options.trainer));
  options.config_path = args.config;
  options.overrides = args.overrides;
  options.device = args.device;
  options.collective_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(args.collective_timeout_s * 1000.0));
  options.metrics_out = args.metrics_out;
  options.metrics_history = args.metrics_history;
  options.weights_out = args.weights_out;
  options.quiet = args.explicit_log_level;
  return options;
}

int RunTrain(const TrainArgs& args) { return train::RunRank(ParseRankOptions(args)); }

}  // namespace

void AddTrainCommand(CLI::App& app, CommandBody* run) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train an MLP data-parallel: one rank of `mpirun -np N coupler train CONFIG`");
  cmd->add_option("config", args->config, "training config (flat YAML)")->required();
  cmd->add_option("--set", args->overrides, "override a config key: KEY=VALUE (repeatable)");
  cmd->add_flag("--resume", args->resume, "continue from this run's newest checkpoint");
  cmd->add_option("--resume-from", args->resume_from,
                  "continue from this checkpoint file (refused when another run wrote it)");
  cmd->add_flag("--force", args->force,
                "with --resume-from: start from a checkpoint written with other settings (lr, "
                "seed, ...); this run keeps its own checkpoints apart from it");
  cmd->add_option("--device-memory-limit", args->device_memory_limit,
                   "device memory budget per rank, e.g. 512MiB (CPU backend: enforced)");
  cmd->add_option("--device", args->device,
                  "auto (a GPU when the build has CUDA and one is visible), cpu or cuda")
      ->capture_default_str();
  cmd->add_option("--collective-timeout", args->collective_timeout_s,
                  "seconds a collective may take before the group fails")
      ->capture_default_str();
  cmd->add_option("--metrics-out", args->metrics_out, "write final metrics as JSON (rank 0)");
  cmd->add_option("--metrics-history", args->metrics_history,
                  "write one JSON line per step here (rank 0; default: beside --metrics-out, "
                  "as <stem>.steps.jsonl)");
  cmd->add_option("--weights-out", args->weights_out, "write final weights as .npy (rank 0)");
  cmd->add_option("--grad-wire", args->grad_wire, "gradient all-reduce format: fp32, fp16, bf16")
      ->capture_default_str();
  cmd->add_option("--inject-inf-grad", args->inject_inf_grad,
                  "testing: make rank 0's gradients inf on step STEP or steps FIRST-LAST");
  cmd->add_option("--stop-after-steps", args->stop_after_steps,
                  "testing: stop after N optimizer steps, as if interrupted");
  CLI::App* root = &app;
  cmd->callback([args, run, root] {
    args->explicit_log_level = root->get_option("--log-level")->count() > 0;
    *run = [args] { return RunTrain(*args); };
  });
}

}  // namespace coupler::cli
