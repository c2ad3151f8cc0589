// `coupler train CONFIG`: one rank of a data-parallel group, launched as
// `mpirun -np N coupler train CONFIG`. Picks its device (a GPU by local rank, or the CPU), reads
// the config and data, trains over NCCL or MPI, and rank 0 writes the metrics and weights.
// Any rank's failure ends the whole job (MPI_Abort), so a dead or stalled peer never leaves the
// others waiting.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "kernels/device.h"
#include "runtime/comm/mpi_communicator.h"
#include "runtime/comm/mpi_session.h"
#include "runtime/comm/nccl_factory.h"
#include "runtime/io/npy_writer.h"
#include "runtime/logging.h"
#include "runtime/memory/memory_budget.h"
#include "worker/train/cuda_train_backend.h"
#include "worker/train/dataset.h"
#include "worker/train/host_staged_communicator.h"
#include "worker/train/train_config.h"
#include "worker/train/trainer.h"

namespace coupler::cli {
namespace {

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  bool resume = false;
  std::string device_memory_limit;
  double collective_timeout_s = 300;
  std::string metrics_out;
  std::string weights_out;
  std::string grad_wire = "fp32";
  std::string device = "auto";  // auto, cpu or cuda
  std::string inject_inf_grad;  // "STEP" or "FIRST-LAST"
  int64_t stop_after_steps = -1;
  bool explicit_log_level = false;
};

int ExitCodeFor(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

Status ParseOptions(const TrainArgs& args, train::TrainerOptions* options) {
  if (!args.device_memory_limit.empty()) {
    auto limit = memory::ParseByteSize(args.device_memory_limit);
    if (!limit.ok()) return limit.status().WithContext("--device-memory-limit");
    options->device_memory_limit = *limit;
  }
  if (args.grad_wire == "fp16") {
    options->wire = comm::GradientWireType::kFloat16;
  } else if (args.grad_wire == "bf16") {
    options->wire = comm::GradientWireType::kBFloat16;
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
  options->resume = args.resume;
  options->stop_after_steps = args.stop_after_steps;
  return Status::Ok();
}

// Whether this rank trains on a GPU. auto: when the build has CUDA and a device is visible.
Result<bool> UseCuda(const std::string& device) {
  if (device == "cpu") return false;
  if (device == "auto") return kernels::BuiltWithCuda() && kernels::HaveCudaDevice();
  if (device != "cuda") {
    return InvalidArgument("--device must be auto, cpu or cuda, not '" + device + "'");
  }
  if (!kernels::BuiltWithCuda()) {
    return InvalidArgument("--device cuda: this coupler was built without CUDA "
                           "(configure with -DCOUPLER_WITH_CUDA=ON), use --device cpu");
  }
  if (!kernels::HaveCudaDevice()) {
    return InvalidArgument("--device cuda: no CUDA device is visible to this process (check "
                           "the driver and CUDA_VISIBLE_DEVICES, or use --device cpu)");
  }
  return true;
}

// This rank's index among the ranks on its host, as Open MPI's launcher tells it; the world rank
// when launched otherwise (one rank per host is the common case then).
int LocalRank(int world_rank) {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return world_rank;
}

int RunTrain(const TrainArgs& args) {
  auto session = comm::MpiSession::Start();
  if (!session.ok()) {
    std::fprintf(stderr, "coupler train: cannot start MPI: %s\n",
                 session.status().ToString().c_str());
    return kExitFailure;
  }
  const int rank = session->world_rank();
  const bool multi = session->world_size() > 1;
  if (!args.explicit_log_level && rank == 0) Logger("train")->set_level(spdlog::level::info);
  // Every rank checks the same inputs, so every rank fails alike; only rank 0 says why.
  auto fail = [&](const Status& s, std::string_view what) {
    const int code = ExitCodeFor(s);
    if (rank == 0 || code == kExitFailure) {
      std::fprintf(stderr, "coupler train: rank %d: %s: %s\n", rank, std::string(what).c_str(),
                   s.ToString().c_str());
      std::fflush(stderr);
    }
    if (multi && code == kExitFailure) comm::MpiSession::AbortJob(code);
    return code;
  };

  train::TrainerOptions options;
  if (Status s = ParseOptions(args, &options); !s.ok()) return fail(s, "bad option");
  auto config = train::LoadTrainConfig(args.config, args.overrides);
  if (!config.ok()) return fail(config.status(), "bad config");
  options.config = *config;
  auto all = train::LoadDataset(config->data, config->label_column);
  if (!all.ok()) return fail(all.status(), "cannot read the data");
  const train::Split split = train::SplitDataset(*all, config->test_fraction, config->seed);

  auto use_cuda = UseCuda(args.device);
  if (!use_cuda.ok()) return fail(use_cuda.status(), "bad option");
  std::unique_ptr<train::CudaTrainBackend> cuda;
  if (*use_cuda) {
    const int device = LocalRank(rank) % kernels::CudaDeviceCount();
    auto backend = train::CudaTrainBackend::Create(device, options.device_memory_limit);
    if (!backend.ok()) {
      return fail(backend.status(), "cannot use cuda:" + std::to_string(device));
    }
    cuda = std::move(*backend);
    options.backend = cuda.get();
  }
  Logger("train")->info("rank {} trains on {}", rank, cuda ? cuda->name() : std::string("cpu"));

  const auto timeout = std::chrono::milliseconds(
      static_cast<int64_t>(args.collective_timeout_s * 1000.0));
  auto communicator = comm::MpiCommunicator::Create(timeout);
  if (!communicator.ok()) return fail(communicator.status(), "cannot create the communicator");
  comm::Communicator* gradients = communicator->get();
  std::unique_ptr<comm::Communicator> nccl;
  std::unique_ptr<train::HostStagedCommunicator> staged;
  if (cuda) {
    // Gradients stay in device memory: NCCL reduces them there. MPI keeps the small host-side
    // collectives (evaluation, resume), which NCCL cannot take.
    options.host_comm = communicator->get();
    if (comm::NcclAvailable()) {
      auto created = comm::CreateNcclCommunicator(**communicator, cuda->device(), timeout);
      if (!created.ok()) return fail(created.status(), "cannot create the NCCL communicator");
      nccl = std::move(*created);
      gradients = nccl.get();
      options.communicator_name = "nccl";
    } else {
      if (rank == 0) {
        Logger("train")->warn("this build has no NCCL: gradients go through host memory over "
                              "MPI (two copies per all-reduce)");
      }
      staged = std::make_unique<train::HostStagedCommunicator>(**communicator, *cuda);
      gradients = staged.get();
    }
  }
  auto report = train::RunTraining(options, split, *gradients);
  if (!report.ok()) return fail(report.status(), "training failed");

  if (rank == 0) {
    if (!args.metrics_out.empty()) {
      if (Status s = train::WriteMetricsJson(args.metrics_out, *report); !s.ok()) {
        return fail(s, "cannot write --metrics-out");
      }
    }
    if (!args.weights_out.empty()) {
      if (Status s = io::WriteFloatArrayNpyAtomic(args.weights_out, report->weights); !s.ok()) {
        return fail(s, "cannot write --weights-out");
      }
    }
    std::printf("test_accuracy %.4f final_loss %.4f steps %lld samples/s %.0f precision %s "
                "micro_batch %zu accumulate %zu ranks %d peak_device_bytes %zu device %s "
                "communicator %s\n",
                report->test_accuracy, report->final_loss,
                static_cast<long long>(report->steps), report->samples_per_s,
                std::string(train::PrecisionName(report->precision)).c_str(),
                report->micro_batch, report->accumulate, report->world_size,
                report->peak_device_bytes, report->device.c_str(),
                report->communicator.c_str());
  }
  return kExitOk;
}

}  // namespace

void AddTrainCommand(CLI::App& app, CommandBody* run) {
  auto args = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train an MLP data-parallel: one rank of `mpirun -np N coupler train CONFIG`");
  cmd->add_option("config", args->config, "training config (flat YAML)")->required();
  cmd->add_option("--set", args->overrides, "override a config key: KEY=VALUE (repeatable)");
  cmd->add_flag("--resume", args->resume, "continue from the newest checkpoint");
  cmd->add_option("--device-memory-limit", args->device_memory_limit,
                   "device memory budget per rank, e.g. 512MiB (CPU backend: enforced)");
  cmd->add_option("--device", args->device,
                  "auto (a GPU when the build has CUDA and one is visible), cpu or cuda")
      ->capture_default_str();
  cmd->add_option("--collective-timeout", args->collective_timeout_s,
                  "seconds a collective may take before the group fails")
      ->capture_default_str();
  cmd->add_option("--metrics-out", args->metrics_out, "write final metrics as JSON (rank 0)");
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
