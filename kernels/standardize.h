// standardize: x' = (x - mean) / stddev over a float32 column, with the population stddev of
// the reduced column_stats, so the result has mean 0 and stddev 1. Computed in float64 and
// rounded once to float32, which keeps full precision when |mean| is much larger than stddev.
#pragma once

#include <span>

#include "kernels/backend.h"
#include "runtime/status.h"

namespace coupler::kernels {

// `out` has in's length and is either `in` itself or does not overlap it. A missing value (NaN)
// stays NaN, as in pandas; the stats it is given skipped it. stddev == 0 (a
// constant column) gives 0 everywhere: the column carries no information, and a division would
// give NaN or inf. Both backends give bit-identical results, up to NaN payloads (GPUs return a
// canonical NaN). Unavailable for kCuda in a CPU-only build or without a device,
// ResourceExhausted when device memory runs out.
Status Standardize(std::span<const float> in, std::span<float> out, double mean, double stddev,
                   Backend backend);

}  // namespace coupler::kernels
