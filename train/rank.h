// One rank of `mpirun -np N coupler train CONFIG`, assembled: MPI started, this rank's device
// chosen (a GPU by local rank, or the CPU), the config and data read, the gradient communicator
// picked (NCCL, host-staged, MPI), training run, and rank 0's metrics and weights written.
// Any rank's failure ends the whole group (MPI_Abort), so a dead or stalled peer never leaves
// the others waiting. `coupler train` only parses its arguments into RankOptions.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "train/trainer.h"

namespace coupler::train {

// How a rank exits; the same codes every `coupler` command uses.
inline constexpr int kRankExitOk = 0;
inline constexpr int kRankExitFailure = 1;   // the group is aborted
inline constexpr int kRankExitBadInput = 2;  // every rank sees the same bad input; rank 0 says it
// Stopped on request (SIGINT, SIGTERM, SIGUSR1) at a step boundary, with a checkpoint to
// --resume from. Not 0: the run did not finish (no metrics or weights were written). mpirun
// itself exits 1 after a SIGINT or SIGTERM, which it turns into a kill of the job; it passes
// this code on after a SIGUSR1, which it forwards as is.
inline constexpr int kRankExitStopped = 3;

struct RankOptions {
  std::string config_path;
  std::vector<std::string> overrides;  // KEY=VALUE over the config
  // Everything but `config`, `backend` and `communicator_name`, which the rank fills in itself.
  TrainerOptions trainer;
  std::string device = "auto";  // auto (a GPU when built with CUDA and one is visible), cpu, cuda
  std::chrono::milliseconds collective_timeout{300'000};
  std::string metrics_out;  // rank 0 writes the metrics JSON here when set
  // Rank 0's per-step JSON lines; empty = beside metrics_out (HistoryPathFor), or none without it.
  std::string metrics_history;
  std::string weights_out;  // rank 0 writes the final weights (.npy) here when set
  bool quiet = false;       // keep the library's log level; otherwise rank 0 logs at info
};

// Runs this process as one rank and returns its exit code. Errors are printed to stderr: an
// error in `options` (the caller could not parse its arguments) is reported as bad input once
// MPI runs, by rank 0 only, like a bad config.
int RunRank(const Result<RankOptions>& options);

}  // namespace coupler::train
