// column_stats: count, mean, M2 (sum of squared deviations), min and max of a column, computed
// per shard and merged with Chan et al.'s parallel formula, so the reduce of many partials
// equals one pass over all the data. Accumulates in float64.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "kernels/backend.h"
#include "runtime/status.h"

namespace coupler::kernels {

struct ColumnMoments {
  uint64_t count = 0;
  double mean = 0;
  double m2 = 0;  // sum of (x - mean)^2
  // An empty column has min +inf and max -inf: the identities of min and max, so merging an
  // empty partial changes nothing.
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();

  friend bool operator==(const ColumnMoments&, const ColumnMoments&) = default;
};

// NaN is a missing value and is skipped, as pandas does: count is the values present, and mean,
// M2, min and max are over them (a column with nothing present gives the empty moments above).
// Infinities are values: they count, and make mean and M2 inf or NaN. kCuda sums in another
// order: count, min and max equal the CPU's, mean and M2 agree to rounding. Unavailable for kCuda in a CPU-only build or without a device.
Result<ColumnMoments> ComputeMoments(std::span<const float> column, Backend backend);
Result<ColumnMoments> ComputeMoments(std::span<const int32_t> column, Backend backend);
// int64 (ids, counts): the int64 minimum is a missing value and is skipped. CPU only: kCuda
// answers Unavailable, so RunKernel runs it on the CPU twin.
Result<ColumnMoments> ComputeMoments(std::span<const int64_t> column, Backend backend);

// Chan et al.: the moments of the concatenation of the data behind `a` and `b`.
ColumnMoments MergeMoments(const ColumnMoments& a, const ColumnMoments& b);

// Population standard deviation sqrt(M2 / count); 0 for an empty column.
double PopulationStddev(const ColumnMoments& moments);

}  // namespace coupler::kernels
