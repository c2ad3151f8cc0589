// Micro-batch decisions, as pure functions: `micro_batch: auto` sized from the memory planner,
// and the back-off after an out-of-memory step (smaller micro-batch, more accumulation, the same
// effective batch).
#pragma once

#include <cstddef>
#include <string>

#include "train/memory/memory_planner.h"
#include "runtime/status.h"
#include "train/config/train_config.h"

namespace coupler::train {

struct MicroBatchChoice {
  size_t micro_batch = 0;
  size_t accumulate = 0;
  std::string reason;  // a log line when the choice was computed rather than configured
  // One line for the user when auto sizing changed the config's accumulate ("" otherwise).
  std::string notice;
};

// Floats the trainer keeps after the gradients (its per-step verdicts: out-of-memory, loss,
// stop requested).
inline constexpr size_t kGradientTail = 3;

memory::ModelShape ShapeOf(const TrainConfig& config);

// A fixed micro_batch is checked (CheckBatchArithmetic). For auto, the largest micro-batch that
// divides this rank's share of the global batch and fits `limit_bytes` (0 = unlimited: the whole
// share); accumulate follows. ResourceExhausted when even 1 does not fit.
Result<MicroBatchChoice> ChooseMicroBatch(const TrainConfig& config, size_t world_size,
                                          size_t limit_bytes);

// After an out-of-memory step at `micro_batch`: half of it when that divides per_rank, else the
// largest divisor of per_rank below half. 0 when micro_batch is already 1.
size_t BackOffMicroBatch(size_t per_rank, size_t micro_batch);

}  // namespace coupler::train
