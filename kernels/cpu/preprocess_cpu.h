// CPU twins of the preprocessing kernels (column_stats, standardize, filter_map). No argument
// checks here; the public entry points (kernels/column_stats.h, ...) check first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/column_stats.h"

namespace coupler::kernels {

ColumnMoments MomentsCpu(const float* in, size_t n);
ColumnMoments MomentsCpu(const int32_t* in, size_t n);
// int64: the int64 minimum is a missing value and is skipped.
ColumnMoments MomentsCpu(const int64_t* in, size_t n);

// out[i] = float((in[i] - mean) * inv_stddev); `in` and `out` must not overlap.
void StandardizeCpu(const float* in, float* out, size_t n, double mean, double inv_stddev);
void StandardizeInPlaceCpu(float* data, size_t n, double mean, double inv_stddev);

// See FilterMap (kernels/filter_map.h); `threshold` is already FloatThresholdFor's.
size_t FilterMapCpu(const float* a, const float* b, size_t n, float threshold, uint8_t* keep,
                    float* value);

template <typename T>
size_t CompactCpu(const T* in, const uint8_t* keep, size_t n, T* out);

}  // namespace coupler::kernels
