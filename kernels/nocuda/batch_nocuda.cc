// The CUDA twins in a CPU-only build. The public entry points refuse the CUDA backend before
// calling these; they answer Unavailable anyway so nothing can run a missing kernel by accident.
#include "kernels/cuda/batch_cuda.h"
#include "kernels/nocuda/not_built.h"

namespace coupler::kernels {

Status ClipCuda(const float*, float*, size_t, float, float) { return NotBuilt("clip"); }

Status CastCuda(const float*, uint16_t*, size_t, ElementType) {
  return NotBuilt("cast");
}

Status StandardizeCuda(const float*, float*, size_t, double, double) {
  return NotBuilt("standardize");
}

Result<ColumnMoments> MomentsCuda(const float*, size_t) { return NotBuilt("column_stats"); }
Result<ColumnMoments> MomentsCuda(const int32_t*, size_t) { return NotBuilt("column_stats"); }

Result<size_t> FilterMapCuda(const float*, const float*, size_t, float, uint8_t*, float*) {
  return NotBuilt("filter_map");
}

Status HashPartitionCuda(std::span<const std::span<const uint64_t>>, uint32_t, uint32_t*, size_t) {
  return NotBuilt("hash_partition");
}

Status FoldMomentsCuda(const uint32_t*, const double*, size_t, size_t, int64_t*, double*, double*,
                       double*) {
  return NotBuilt("group_fold");
}

Status FoldSumsCuda(const uint32_t*, const int64_t*, size_t, size_t, int64_t*, int64_t*) {
  return NotBuilt("group_fold");
}

template <typename T>
Result<size_t> CompactCuda(const T*, const uint8_t*, size_t, T*) {
  return NotBuilt("compact");
}

#define COUPLER_INSTANTIATE_COMPACT(T) \
  template Result<size_t> CompactCuda<T>(const T*, const uint8_t*, size_t, T*);
COUPLER_INSTANTIATE_COMPACT(float)
COUPLER_INSTANTIATE_COMPACT(int32_t)
COUPLER_INSTANTIATE_COMPACT(uint16_t)
COUPLER_INSTANTIATE_COMPACT(double)
COUPLER_INSTANTIATE_COMPACT(int64_t)
COUPLER_INSTANTIATE_COMPACT(uint8_t)
#undef COUPLER_INSTANTIATE_COMPACT

Status Int8GemmCuda(const void*, bool, size_t, size_t, const int8_t*, size_t, const float*,
                    float*) {
  return NotBuilt("int8_gemm");
}

}  // namespace coupler::kernels
