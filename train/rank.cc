#include "train/rank.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "kernels/device.h"
#include "runtime/check.h"
#include "runtime/io/npy_writer.h"
#include "runtime/logging.h"
#include "train/backend/train_backend.h"
#include "train/comm/mpi_communicator.h"
#include "train/comm/mpi_session.h"
#include "train/comm/nccl_factory.h"
#include "train/data/dataset.h"
#include "train/gradient_backends.h"
#include "train/metrics_history.h"
#include "train/stop_signal.h"

namespace coupler::train {
namespace {

int ExitCodeFor(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
             ? kRankExitBadInput
             : kRankExitFailure;
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

// " in Slurm step JOB.STEP" when srun started the ranks (PMIx gives them rank and size), so
// a group's log says which launcher ran it; "" under mpirun, which sets OMPI_COMM_WORLD_RANK
// (an mpirun inside a Slurm step passes the step's own variables on to its ranks).
std::string SlurmStep() {
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* step = std::getenv("SLURM_STEP_ID");
  if (job == nullptr || step == nullptr || std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) return {};
  return std::string(" in Slurm step ") + job + "." + step;
}

// A word of a command line as a shell reads it back.
std::string ShellWord(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                               "0123456789_-=./,:+@%") == std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Where a stopped run stopped and the command that continues it.
void PrintStopped(const RankOptions& args, const TrainReport& report, int signal_number) {
  // The launcher that started this group starts its continuation: srun sets SLURM_STEP_ID and
  // no OMPI_COMM_WORLD_RANK (see SlurmStep).
  const std::string launcher = SlurmStep().empty() ? "mpirun -np " : "srun --mpi=pmix -n ";
  std::string resume = launcher + std::to_string(report.world_size) + " coupler train " +
                       ShellWord(args.config_path);
  for (const std::string& o : args.overrides) resume += " --set " + ShellWord(o);
  resume += " --resume";
  // The outputs the run was asked for, so the continued run writes them too.
  auto flag = [&resume](const char* name, const std::string& value) {
    if (!value.empty()) resume += std::string(" ") + name + " " + ShellWord(value);
  };
  flag("--metrics-out", args.metrics_out);
  flag("--metrics-history", args.metrics_history);
  flag("--weights-out", args.weights_out);
  if (args.device != "auto") flag("--device", args.device);
  if (args.trainer.wire != ElementType::kFloat32) {
    flag("--grad-wire", args.trainer.wire == ElementType::kFloat16 ? "fp16" : "bf16");
  }
  if (args.trainer.device_memory_limit != 0) {
    flag("--device-memory-limit", std::to_string(args.trainer.device_memory_limit));
  }
  if (args.collective_timeout != std::chrono::milliseconds(300'000)) {
    flag("--collective-timeout", fmt::format("{:g}", static_cast<double>(args.collective_timeout.count()) / 1000.0));
  }
  std::fprintf(stderr, "coupler train: stopped at step %lld/%lld (epoch %lld)%s: %s; resume with: "
               "%s\n",
               static_cast<long long>(report.completed_steps),
               static_cast<long long>(report.total_steps), static_cast<long long>(report.epoch),
               signal_number != 0 ? (" on signal " + std::to_string(signal_number)).c_str()
                                  : " asked by another rank",
               report.checkpoint.empty()
                   ? "no checkpoint (checkpoint_dir is not set), a resume starts over"
                   : ("checkpoint " + report.checkpoint).c_str(),
               resume.c_str());
  std::fflush(stderr);
}

}  // namespace

int RunRank(const Result<RankOptions>& parsed) {
  auto session = comm::MpiSession::Start();
  if (!session.ok()) {
    std::fprintf(stderr, "coupler train: cannot start MPI: %s\n",
                 session.status().ToString().c_str());
    return kRankExitFailure;
  }
  const int rank = session->world_rank();
  const bool multi = session->world_size() > 1;
  const bool quiet = parsed.ok() && parsed->quiet;
  if (!quiet && rank == 0) Logger("train")->set_level(spdlog::level::info);
  // Every rank checks the same inputs, so every rank fails alike; only rank 0 says why.
  auto fail = [&](const Status& s, std::string_view what) {
    const int code = ExitCodeFor(s);
    if (rank == 0 || code == kRankExitFailure) {
      std::fprintf(stderr, "coupler train: rank %d: %s: %s\n", rank, std::string(what).c_str(),
                   s.ToString().c_str());
      std::fflush(stderr);
    }
    if (multi && code == kRankExitFailure) comm::MpiSession::AbortJob(code);
    return code;
  };

  if (!parsed.ok()) return fail(parsed.status(), "bad option");
  const RankOptions& args = *parsed;
  TrainerOptions options = args.trainer;
  auto config = LoadTrainConfig(args.config_path, args.overrides);
  if (!config.ok()) return fail(config.status(), "bad config");
  options.config = *config;
  auto all = LoadDataset(config->data, config->label_column);
  if (!all.ok()) return fail(all.status(), "cannot read the data");
  Split split = SplitDataset(std::move(*all), config->test_fraction, config->seed);
  HoldOutValidation(split, config->validation_fraction, config->seed);

  auto use_cuda = UseCuda(args.device);
  if (!use_cuda.ok()) return fail(use_cuda.status(), "bad option");
  std::unique_ptr<TrainBackend> cuda;
  if (*use_cuda) {
    const int device = LocalRank(rank) % kernels::CudaDeviceCount();
    auto backend = TrainBackend::CreateCuda(device, options.device_memory_limit);
    if (!backend.ok()) {
      return fail(backend.status(), "cannot use cuda:" + std::to_string(device));
    }
    cuda = std::move(*backend);
    options.backend = cuda.get();
  }
  Logger("train")->info("rank {} trains on {}{}", rank, cuda ? cuda->name() : std::string("cpu"),
                        SlurmStep());

  auto communicator = comm::MpiCommunicator::Create(args.collective_timeout);
  if (!communicator.ok()) return fail(communicator.status(), "cannot create the communicator");
  GradientRank gradient_rank{**communicator};
  if (cuda) {
    gradient_rank.gpu = cuda.get();
    gradient_rank.gpu_device = cuda->device();
    gradient_rank.nccl_available = comm::NcclAvailable();
  }
  gradient_rank.timeout = args.collective_timeout;
  const GradientBackend* backend = FirstUsableGradientBackend(GradientBackends(), gradient_rank);
  COUPLER_CHECK(backend != nullptr) << "MPI serves every rank";
  auto gradients = CreateGradientCommunicator(*backend, gradient_rank);
  if (!gradients.ok()) {
    return fail(gradients.status(), "cannot create " + std::string(backend->what));
  }
  options.communicator_name = std::string(backend->name);
  options.metrics_history = !args.metrics_history.empty() ? args.metrics_history
                            : args.metrics_out.empty()    ? std::string()
                                                          : HistoryPathFor(args.metrics_out);
  // From here a signal stops the group at a step boundary with a checkpoint.
  StopSignals stop;
  options.stop_requested = &stop.requested();
  auto report = RunTraining(options, split, {**communicator, *gradients->communicator});
  if (!report.ok()) return fail(report.status(), "training failed");
  if (report->stopped) {
    if (rank == 0) PrintStopped(args, *report, stop.signal_number());
    return kRankExitStopped;
  }

  if (rank == 0) {
    if (!args.metrics_out.empty()) {
      if (Status s = WriteMetricsJson(args.metrics_out, *report); !s.ok()) {
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
                std::string(PrecisionName(report->precision)).c_str(), report->micro_batch,
                report->accumulate, report->world_size, report->peak_device_bytes,
                report->device.c_str(), report->communicator.c_str());
  } else {
    // One line from each other rank too, so its own output (mpirun --output-filename, `coupler
    // logs`) says where it ran and that it finished, not only that it stayed silent. On stderr:
    // mpirun merges the ranks' stdout, where a script reads rank 0's result line alone.
    std::fprintf(stderr, "rank %d of %d done: %lld steps on %s, %s\n", rank, report->world_size,
                static_cast<long long>(report->steps), report->device.c_str(),
                report->communicator.c_str());
  }
  return kRankExitOk;
}

}  // namespace coupler::train
