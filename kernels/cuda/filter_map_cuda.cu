// CUDA twins of filter_map and compact. filter_map: one grid-stride pass writes every keep flag
// and root through FilterMapValue (the CPU twin's element math), then CUB's DeviceSelect::Flagged
// packs the kept roots to the front in place, order preserved. compact: Flagged out of place.
// Flagged is a stable stream compaction, so the output order is the CPU loop's.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cub/device/device_select.cuh>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/cuda/batch_launch.h"
#include "kernels/cuda/column_pass.h"
#include "kernels/elementwise.h"

namespace coupler::kernels {
namespace {

__global__ void FilterMapKernel(const float* __restrict__ a, const float* __restrict__ b,
                                size_t n, float threshold, uint8_t* __restrict__ keep,
                                float* __restrict__ root) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const FilterMapRow row = FilterMapValue(a[i], b[i], threshold);
    keep[i] = row.keep;
    root[i] = row.root;
  }
}

}  // namespace

Status LaunchFilterMap(const float* d_a, const float* d_b, size_t n, float threshold,
                       uint8_t* d_keep, float* d_value, int64_t* d_kept, int max_blocks,
                       CubScratch& scratch, cudaStream_t stream) {
  const size_t wanted = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  const int blocks = static_cast<int>(std::min<size_t>(wanted, max_blocks));
  FilterMapKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(d_a, d_b, n, threshold, d_keep,
                                                           d_value);
  COUPLER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  COUPLER_CUDA_RETURN_IF_ERROR(cub::DeviceSelect::Flagged(scratch.temp(), scratch.bytes(),
                                                          d_value, d_keep, d_kept,
                                                          static_cast<int64_t>(n), stream));
  return Status::Ok();
}

Status ReserveFilterMap(CubScratch& scratch, size_t n) {
  return scratch.Reserve([n](void* temp, size_t& bytes) {
    // The same argument types as LaunchFilterMap's call, so CUB sizes the same algorithm.
    return cub::DeviceSelect::Flagged(temp, bytes, static_cast<float*>(nullptr),
                                      static_cast<uint8_t*>(nullptr),
                                      static_cast<int64_t*>(nullptr), static_cast<int64_t>(n));
  });
}

namespace {

template <typename T>
Status ReserveCompact(CubScratch& scratch, size_t n) {
  return scratch.Reserve([n](void* temp, size_t& bytes) {
    return cub::DeviceSelect::Flagged(temp, bytes, static_cast<const T*>(nullptr),
                                      static_cast<const uint8_t*>(nullptr),
                                      static_cast<T*>(nullptr), static_cast<int64_t*>(nullptr),
                                      static_cast<int64_t>(n));
  });
}

template <typename T>
Status LaunchCompact(const T* d_in, const uint8_t* d_keep, size_t n, T* d_out, int64_t* d_kept,
                     CubScratch& scratch, cudaStream_t stream) {
  COUPLER_CUDA_RETURN_IF_ERROR(cub::DeviceSelect::Flagged(scratch.temp(), scratch.bytes(), d_in,
                                                          d_keep, d_out, d_kept,
                                                          static_cast<int64_t>(n), stream));
  return Status::Ok();
}

}  // namespace

Result<size_t> KeptCount(const int64_t* d_kept, cudaStream_t stream) {
  int64_t kept = 0;
  COUPLER_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&kept, d_kept, sizeof(kept), cudaMemcpyDeviceToHost, stream));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return static_cast<size_t>(kept);
}

Result<size_t> FilterMapCuda(const float* a, const float* b, size_t n, float threshold,
                             uint8_t* keep, float* value) {
  const size_t chunk = std::min(n, kCudaChunkElements);
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_a, DeviceBuffer::Allocate(chunk * sizeof(float)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_b, DeviceBuffer::Allocate(chunk * sizeof(float)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_keep, DeviceBuffer::Allocate(chunk));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_value, DeviceBuffer::Allocate(chunk * sizeof(float)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_kept, DeviceBuffer::Allocate(sizeof(int64_t)));
  COUPLER_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  CubScratch scratch;
  COUPLER_RETURN_IF_ERROR(ReserveFilterMap(scratch, chunk));
  size_t kept = 0;
  for (size_t start = 0; start < n; start += chunk) {
    const size_t count = std::min(chunk, n - start);
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_a.as<float>(), a + start,
                                                 count * sizeof(float), cudaMemcpyHostToDevice,
                                                 stream.get()));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_b.as<float>(), b + start,
                                                 count * sizeof(float), cudaMemcpyHostToDevice,
                                                 stream.get()));
    // The last chunk is shorter; CUB's temp storage only shrinks with the count.
    COUPLER_RETURN_IF_ERROR(ReserveFilterMap(scratch, count));
    COUPLER_RETURN_IF_ERROR(LaunchFilterMap(d_a.as<const float>(), d_b.as<const float>(), count,
                                            threshold, d_keep.as<uint8_t>(),
                                            d_value.as<float>(), d_kept.as<int64_t>(),
                                            max_blocks, scratch, stream.get()));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(keep + start, d_keep.as<uint8_t>(), count,
                                                 cudaMemcpyDeviceToHost, stream.get()));
    COUPLER_ASSIGN_OR_RETURN(const size_t chunk_kept,
                             KeptCount(d_kept.as<const int64_t>(), stream.get()));
    // Each chunk's roots follow the previous chunks' kept ones: kept <= start, so this never
    // reaches past the chunk's own rows of `value`.
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(value + kept, d_value.as<float>(),
                                                 chunk_kept * sizeof(float),
                                                 cudaMemcpyDeviceToHost, stream.get()));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
    kept += chunk_kept;
  }
  return kept;
}

template <typename T>
Result<size_t> CompactCuda(const T* in, const uint8_t* keep, size_t n, T* out) {
  const size_t chunk = std::min(n, kCudaChunkElements);
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_in, DeviceBuffer::Allocate(chunk * sizeof(T)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_keep, DeviceBuffer::Allocate(chunk));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_out, DeviceBuffer::Allocate(chunk * sizeof(T)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_kept, DeviceBuffer::Allocate(sizeof(int64_t)));
  COUPLER_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  CubScratch scratch;
  COUPLER_RETURN_IF_ERROR(ReserveCompact<T>(scratch, chunk));
  size_t kept = 0;
  for (size_t start = 0; start < n; start += chunk) {
    const size_t count = std::min(chunk, n - start);
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_in.as<T>(), in + start, count * sizeof(T),
                                                 cudaMemcpyHostToDevice, stream.get()));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_keep.as<uint8_t>(), keep + start, count,
                                                 cudaMemcpyHostToDevice, stream.get()));
    COUPLER_RETURN_IF_ERROR(ReserveCompact<T>(scratch, count));
    COUPLER_RETURN_IF_ERROR(LaunchCompact(d_in.as<const T>(), d_keep.as<const uint8_t>(), count,
                                          d_out.as<T>(), d_kept.as<int64_t>(), scratch,
                                          stream.get()));
    COUPLER_ASSIGN_OR_RETURN(const size_t chunk_kept,
                             KeptCount(d_kept.as<const int64_t>(), stream.get()));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out + kept, d_out.as<T>(), chunk_kept * sizeof(T),
                                                 cudaMemcpyDeviceToHost, stream.get()));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
    kept += chunk_kept;
  }
  return kept;
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

}  // namespace coupler::kernels
