// CUDA twins of the batch kernels, declared without CUDA headers. Host pointers in and out: each
// call copies the column to the calling thread's current device in chunks, runs the kernel and
// copies the result back. Defined in kernels/cuda/*.cu; kernels/nocuda/ supplies stubs that
// return Unavailable, so callers link the same way in every build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/column_stats.h"
#include "runtime/precision/half.h"
#include "runtime/status.h"

namespace coupler::kernels {

// Elements moved per chunk: bounds the device memory one call holds (128 MiB per float
// buffer) whatever the column length.
inline constexpr size_t kCudaChunkElements = size_t{1} << 25;

// `in` may equal `out` (in place); otherwise they must not overlap.
Status ClipCuda(const float* in, float* out, size_t n, float lo, float hi);

// `in` and `out` must not overlap.
Status CastCuda(const float* in, uint16_t* out, size_t n, ElementType format);

// out[i] = StandardizeValue(in[i], mean, inv_stddev); `in` may equal `out`.
Status StandardizeCuda(const float* in, float* out, size_t n, double mean, double inv_stddev);

// The moments of the whole column, merged from per-block partials (see moments_cuda.cu).
Result<ColumnMoments> MomentsCuda(const float* in, size_t n);
Result<ColumnMoments> MomentsCuda(const int32_t* in, size_t n);

// See FilterMap (kernels/filter_map.h); `threshold` is already FloatThresholdFor's. Writes
// keep[0..n) and value[0..kept); value's tail is left as it was.
Result<size_t> FilterMapCuda(const float* a, const float* b, size_t n, float threshold,
                             uint8_t* keep, float* value);

// out[0..kept) = the in[i] with keep[i] != 0, in order. Instantiated for float, int32_t,
// uint16_t and double.
template <typename T>
Result<size_t> CompactCuda(const T* in, const uint8_t* keep, size_t n, T* out);

// See HashPartition (kernels/hash_partition.h); input already checked, n = out's length > 0.
Status HashPartitionCuda(std::span<const std::span<const uint64_t>> words, uint32_t partitions,
                         uint32_t* out, size_t n);

// See FoldMoments and FoldSums (kernels/group_fold.h): the per-group state arrays (`groups`
// long each) take x[0..n); input already checked, n > 0, 0 < groups < kMissingRow. On an
// error the arrays may hold part of the fold: callers pass copies.
Status FoldMomentsCuda(const uint32_t* group, const double* x, size_t n, size_t groups,
                       int64_t* count, double* sum, double* mean, double* m2);
Status FoldSumsCuda(const uint32_t* group, const int64_t* x, size_t n, size_t groups,
                    int64_t* count, int64_t* sum);

// See Int8Gemm (kernels/int8_gemm.h); input already checked, m, n, k >= 1.
Status Int8GemmCuda(const void* a, bool a_signed, size_t m, size_t k, const int8_t* w, size_t n,
                    const float* scale, float* c);

}  // namespace coupler::kernels
