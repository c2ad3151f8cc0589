// What a resume keeps from its checkpoint and what it may change, as pure functions. The model
// and its math (layers, optimizer, precision, global batch) must match. The rank count may
// change when the global batch still divides by it: each step then visits the same samples
// (train/data: step s takes rows [s x global_batch, (s+1) x global_batch) of the epoch's order,
// cut into consecutive per-rank shares) and the gradient is the same mean, so only the order of
// floating-point sums differs. The micro-batch is kept where it divides the new share, so the
// accumulation absorbs the change.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/status.h"
#include "train/config/train_config.h"

namespace coupler::train {

// "layers=64,128,10 optimizer=adamw precision=fp32 global_batch=64 ranks=2": stored in every
// checkpoint (the format predates rank-count changes, so the ranks stay its last field).
std::string Fingerprint(const TrainConfig& config, int world_size);

// "lr=0.003; momentum=0.9; weight_decay=0; seed=7; test_fraction=0.2; label_column=label" (with
// the lr schedule and clip_grad_norm before label_column when they are set): what else
// makes a run this run, stored in every checkpoint (CheckpointState::run). A resume continues
// only a checkpoint of the same run; the rank count, the split, epochs, outputs and where the
// data lies may change.
std::string RunIdentity(const TrainConfig& config);

// "lr 0.001 in the checkpoint, 0.003 here; seed 1 in the checkpoint, 7 here": the settings two
// identities give differently ("" when none).
std::string IdentityDifferences(std::string_view checkpoint, std::string_view here);

// Whether a checkpoint of `fingerprint` and `run` may be resumed by this config (its model and
// math, and its run when the checkpoint names one), whatever the rank counts.
bool SameRun(const TrainConfig& config, std::string_view fingerprint, std::string_view run);

// The ranks a fingerprint names; nullopt when it names none.
std::optional<int> FingerprintRanks(std::string_view fingerprint);

struct ResumeSplit {
  size_t micro_batch = 0;
  size_t accumulate = 0;
  int checkpoint_ranks = 0;
  // One line for the user when the run does not use the config's split ("" when it does).
  std::string notice;
};

// The split a resumed run uses on `world_size` ranks, from the checkpoint's fingerprint and its
// split (after any out-of-memory back-off). `configured_*` is the config's resolved split, 0 when
// it did not fit this rank count. InvalidArgument when the model differs or the global batch
// cannot be kept.
Result<ResumeSplit> PlanResumeSplit(const TrainConfig& config, int world_size,
                                    std::string_view checkpoint_fingerprint,
                                    size_t checkpoint_micro_batch, size_t checkpoint_accumulate,
                                    size_t configured_micro_batch, size_t configured_accumulate);

// The rank counts that keep `global_batch` whole, for messages: "1, 2, 4, 8, 16, 32 or 64".
std::string RankCountsFor(size_t global_batch);

}  // namespace coupler::train
