// One rank of a data-parallel training group: the step loop with gradient accumulation, fused
// bucketed all-reduce, mixed precision with dynamic loss scaling, OOM back-off agreed by all
// ranks, checkpoints and resume. Takes its data and communicators from the caller, so the same
// code runs under mpirun and as threads in tests.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "train/comm/communicator.h"
#include "train/comm/gradient_reducer.h"
#include "runtime/status.h"
#include "train/data/dataset.h"
#include "train/backend/train_backend.h"
#include "train/config/train_config.h"

namespace coupler::train {

struct TrainerOptions {
  TrainConfig config;
  size_t device_memory_limit = 0;  // bytes; 0 = unlimited
  bool resume = false;             // continue from the newest checkpoint in checkpoint_dir
  // Continue from this checkpoint file instead (implies resume). Refused when it is another
  // run's (other lr, seed, ...) unless `force`: the run then starts from its weights as a run of
  // its own, keeping its checkpoints apart from the file's. The model must match either way.
  std::string resume_from;
  bool force = false;
  ElementType wire = ElementType::kFloat32;
  double progress_interval_s = 2.0;  // rank 0's progress lines; <= 0 = every step
  // Testing aid: rank 0's local gradients become inf on optimizer steps [first, last].
  int64_t inject_inf_first = -1;
  int64_t inject_inf_last = -1;
  // Testing aid: stop (as if killed) after this many optimizer steps; -1 = run to the end.
  int64_t stop_after_steps = -1;
  // Where the model lives and computes (borrowed; must outlive the run); null = the CPU kernels
  // on host memory.
  TrainBackend* backend = nullptr;
  std::string communicator_name = "mpi";  // what the report records
  // Raised (by a signal handler) to stop at the next step boundary: the ranks agree on it in the
  // step's all-reduce, rank 0 checkpoints and the run returns with `stopped`. Borrowed; null =
  // never.
  const std::atomic<bool>* stop_requested = nullptr;
  // Rank 0 appends one JSON line per step here (train/metrics_history.h); empty = none.
  std::string metrics_history;
};

// The rank's communicators over one group, both borrowed (they must outlive the run).
struct TrainCommunicators {
  // The trainer's small host-side collectives (evaluation, peaks, resume): host memory.
  comm::Communicator& host;
  // The gradient all-reduce: its memory_space() is where the backend keeps the gradients
  // (device memory on a GPU backend: NCCL, or host staging).
  comm::Communicator& gradients;

  // One host communicator for both, as on a CPU rank.
  static TrainCommunicators Host(comm::Communicator& both) { return {both, both}; }
};

struct TrainReport {
  double test_accuracy = 0;
  double final_loss = 0;           // mean training loss over the last epoch's steps
  int64_t steps = 0;               // optimizer steps run by this process (skipped ones included)
  int64_t skipped_steps = 0;       // non-finite gradients
  double samples_per_s = 0;        // global samples per second of the step loop
  ElementType precision = ElementType::kFloat32;
  size_t micro_batch = 0;          // as finally used (after auto sizing and back-off)
  size_t accumulate = 0;
  int world_size = 1;
  size_t peak_device_bytes = 0;    // max over ranks
  size_t peak_working_set_bytes = 0;  // activations + compute copies + workspace, max over ranks
  // This rank's parts of what the forward/backward pass touches: activations and their
  // gradients at peak, the weights as the GEMMs read them (the fp32 masters in an fp32 run,
  // the 16-bit copies otherwise) and the GEMM widening workspace.
  size_t peak_activation_bytes = 0;
  size_t compute_weight_bytes = 0;
  size_t workspace_bytes = 0;
  float loss_scale = 1;
  size_t buckets_per_step = 0;
  size_t step_allreduces = 0;      // all-reduce calls counted at the communicator during steps
  int64_t step_attempts = 0;       // steps run including OOM retries
  std::vector<float> weights;      // final fp32 masters (the same on every rank)
  std::string device = "cpu";      // the backend's name: "cpu" or "cuda:N"
  std::string communicator = "mpi";
  // What ran the GEMMs: "cublas", or on the CPU "onednn avx512_core_amx" (with the instruction
  // set oneDNN chose), "openblas" for fp16 (oneDNN has no CPU fp16 kernel) and for bf16 on a
  // CPU without AVX-512.
  std::string gemm;
  // With validation_fraction: the last epoch's validation scores (< 0: none), the best val_loss
  // so far with its accuracy and epoch, the checkpoint holding those weights (with a
  // checkpoint_dir), and whether early stopping ended the run.
  double val_loss = -1;
  double val_accuracy = -1;
  double best_val_loss = -1;
  double best_val_accuracy = -1;
  int64_t best_epoch = 0;
  std::string best_checkpoint;
  bool early_stopped = false;
  // The training loop's wall time over every attempt of the run (resumes included), and the
  // rate over it: metrics.json's run-wide figures, where steps and samples_per_s are this
  // attempt's.
  double run_seconds = 0;
  double run_samples_per_s = 0;
  // Stopped on request at a step boundary (stop_requested): no evaluation ran, and test_accuracy
  // and weights are not final.
  bool stopped = false;
  int64_t completed_steps = 0;  // optimizer steps done in the whole run (resumes included)
  int64_t total_steps = 0;
  int64_t epoch = 0;            // 1-based epoch of the last completed step
  std::string checkpoint;       // the checkpoint written at the stop; "" without checkpoint_dir
};

// InvalidArgument when a communicator takes memory other than the one it is used for, or the two
// are not over the same group.
Result<TrainReport> RunTraining(const TrainerOptions& options, const Split& data,
                                TrainCommunicators comms);

// {"test_accuracy", "final_loss", "steps", "samples_per_s", "precision", "micro_batch",
//  "accumulate", "world_size", "peak_device_bytes", "device", "communicator", ...}, written
// atomically.
Status WriteMetricsJson(const std::string& path, const TrainReport& report);

}  // namespace coupler::train
