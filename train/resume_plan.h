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
