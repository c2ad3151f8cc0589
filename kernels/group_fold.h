// group_fold: group_by's arithmetic — each present value folded into its group's count, sum,
// mean and M2 (or exact integer sum), in row order (runtime/relational/group_fold.h). The CPU
// twin is the relational loop; the CUDA twin sorts the rows by group (stably) and folds each
// group's values in row order on one device thread per group, with the same rounding
// (shuffle_math.h), so both give the same bits.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/backend.h"
#include "runtime/relational/group_fold.h"
#include "runtime/status.h"

namespace coupler::kernels {

// state[group[r]] takes x[r], rows in order; kMissingRow groups are skipped. InvalidArgument
// for bad input (relational::CheckFoldInput) on either backend; Unavailable for kCuda in a
// CPU-only build or without a device. The CUDA twin writes `state` only once all rows folded.
Status FoldMoments(std::span<const uint32_t> group, std::span<const double> x,
                   relational::GroupMoments& state, Backend backend);
Status FoldSums(std::span<const uint32_t> group, std::span<const int64_t> x,
                relational::GroupSums& state, Backend backend);

// The folds on `backend`, as PartialAggregate and GroupAggregate take them; `run(kernel)` calls
// kernel(backend) — a worker's RunKernel, which falls back to the CPU when CUDA is unavailable.
template <typename Run>
relational::GroupFold GroupFoldOn(Run run) {
  relational::GroupFold fold;
  fold.moments = [run](std::span<const uint32_t> group, std::span<const double> x,
                       relational::GroupMoments& state) {
    return run([&](Backend backend) { return FoldMoments(group, x, state, backend); });
  };
  fold.sums = [run](std::span<const uint32_t> group, std::span<const int64_t> x,
                    relational::GroupSums& state) {
    return run([&](Backend backend) { return FoldSums(group, x, state, backend); });
  };
  return fold;
}

}  // namespace coupler::kernels
