// Training checkpoints: everything a resumed run needs to continue bit-for-bit — weights,
// optimizer state, loss scale, step, the micro-batch after any OOM back-off — in one
// checksummed file per step, published atomically and fsynced by rank 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace coupler::train {

struct CheckpointState {
  int64_t step = 0;             // optimizer steps completed (the next step to run)
  uint64_t seed = 0;            // shuffles derive from (seed, epoch): no other RNG state exists
  uint64_t micro_batch = 0;
  uint64_t accumulate = 0;
  float loss_scale = 1.0f;
  int64_t clean_steps = 0;
  int64_t optimizer_steps = 0;  // AdamW bias correction counts applied updates
  std::string fingerprint;      // layers, optimizer, precision: a resume must match them
  // The run's other settings (RunIdentity: lr, seed, ...): a resume continues only the run it
  // names. Empty in a checkpoint written before it was kept.
  std::string run;
  // The run's progress beyond its weights (format 3), so a resumed run goes on with it: the
  // training loop's wall time over every attempt (metrics.json's run-wide rate), and the best
  // validation score so far with the epochs since (the best checkpoint, early stopping).
  double train_seconds = 0;
  double best_val_loss = 0;
  double best_val_accuracy = 0;
  int64_t best_epoch = 0;  // 0: no validation scored yet
  int64_t epochs_since_best = 0;
  std::vector<float> params;
  std::vector<float> optimizer_state;
};

// "<dir>/ckpt-<step, 10 digits>.bin".
std::string CheckpointPath(const std::string& dir, int64_t step);

// Writes atomically and durably, then removes all but the newest `keep` checkpoints.
Status WriteCheckpoint(const std::string& dir, const CheckpointState& state, int keep = 3);

// Reads one file; InvalidArgument naming it when truncated, corrupt (checksum) or foreign.
Result<CheckpointState> ReadCheckpoint(const std::string& path);

// The folders under `dir` that may hold checkpoints: `dir` itself, then its "run-*" sub-folders
// (where a run started in a folder holding another run's checkpoints keeps its own).
std::vector<std::string> CheckpointFolders(const std::string& dir);
// Whether `dir` itself holds a checkpoint file.
bool HasCheckpoints(const std::string& dir);

// The newest readable checkpoint in dir (a corrupt newest one is skipped with a warning, so a
// crash mid-write never blocks a resume); nullopt when there is none.
Result<std::optional<CheckpointState>> ReadNewestCheckpoint(const std::string& dir);

}  // namespace coupler::train
