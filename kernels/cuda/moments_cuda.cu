// CUDA twin of column_stats' partial moments. The column is cut into tiles of kTile elements;
// a block takes tiles in turn and gets each tile's exact two-pass mean and M2 in float64 (the
// second pass re-reads a tile that is still in L1/L2), then folds it into its running partial
// with Chan's formula, the same scheme as the CPU twin (moments_cpu.cc) with other block
// boundaries. The per-block partials go back to the host and merge there with MergeMoments.
// So the sums are reassociated: mean and M2 match the CPU to rounding (tests allow relative
// 1e-9), count, min and max exactly. NaN is a missing value, skipped as on the CPU: it adds
// nothing to the count, the sum or the squares.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <cub/block/block_reduce.cuh>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/cuda/batch_launch.h"
#include "kernels/cuda/column_pass.h"

namespace coupler::kernels {
namespace {

constexpr int kItemsPerThread = 16;
constexpr size_t kTile = size_t{kThreadsPerBlock} * kItemsPerThread;

// ColumnMoments' default member initializers call host-only constexpr functions, so the device
// keeps its partials in this plain struct.
struct Partial {
  unsigned long long count;
  double mean;
  double m2;
  double min;
  double max;
};

// MergeMoments (column_stats.cc), term for term.
__device__ Partial Merge(const Partial& a, const Partial& b) {
  if (a.count == 0) return b;
  if (b.count == 0) return a;
  Partial m;
  m.count = a.count + b.count;
  const double na = static_cast<double>(a.count);
  const double nb = static_cast<double>(b.count);
  const double n = static_cast<double>(m.count);
  const double delta = b.mean - a.mean;
  m.mean = a.mean + delta * (nb / n);
  m.m2 = a.m2 + b.m2 + delta * delta * (na * nb / n);
  m.min = b.min < a.min ? b.min : a.min;
  m.max = a.max < b.max ? b.max : a.max;
  return m;
}

// NaN compares false, so min and max skip it, as on the CPU.
struct MinOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct MaxOp {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};

template <typename T>
__device__ T LowestIdentity() {
  if constexpr (std::is_floating_point_v<T>) {
    return -__int_as_float(0x7f800000);
  } else {
    return static_cast<T>(-2147483647 - 1);
  }
}
template <typename T>
__device__ T HighestIdentity() {
  if constexpr (std::is_floating_point_v<T>) {
    return __int_as_float(0x7f800000);
  } else {
    return static_cast<T>(2147483647);
  }
}

template <typename T>
__device__ bool Present(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v == v;  // false for NaN only
  } else {
    return true;
  }
}

template <typename T>
__global__ void MomentsKernel(const T* __restrict__ x, size_t n, Partial* __restrict__ partials) {
  using SumReduce = cub::BlockReduce<double, kThreadsPerBlock>;
  using ValueReduce = cub::BlockReduce<T, kThreadsPerBlock>;
  using CountReduce = cub::BlockReduce<unsigned int, kThreadsPerBlock>;
  __shared__ typename SumReduce::TempStorage sum_storage;
  __shared__ typename CountReduce::TempStorage count_storage;
  __shared__ typename ValueReduce::TempStorage lo_storage;
  __shared__ typename ValueReduce::TempStorage hi_storage;
  __shared__ double tile_mean;
  __shared__ unsigned int tile_present;

  // Meaningful in thread 0 only, like every BlockReduce result.
  Partial running{0, 0.0, 0.0, static_cast<double>(HighestIdentity<T>()),
                  static_cast<double>(LowestIdentity<T>())};
  const size_t tiles = (n + kTile - 1) / kTile;
  for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    const size_t start = tile * kTile;
    const size_t count = n - start < kTile ? n - start : kTile;
    double sum = 0;
    unsigned int present = 0;
    T lo = HighestIdentity<T>();
    T hi = LowestIdentity<T>();
    for (int k = 0; k < kItemsPerThread; ++k) {
      const size_t i = threadIdx.x + static_cast<size_t>(k) * kThreadsPerBlock;
      if (i < count) {
        const T v = x[start + i];
        const bool p = Present(v);
        sum += p ? static_cast<double>(v) : 0.0;
        present += p ? 1u : 0u;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
    }
    const double tile_sum = SumReduce(sum_storage).Sum(sum);
    const unsigned int tile_count = CountReduce(count_storage).Sum(present);
    const T tile_lo = ValueReduce(lo_storage).Reduce(lo, MinOp());
    const T tile_hi = ValueReduce(hi_storage).Reduce(hi, MaxOp());
    if (threadIdx.x == 0) {
      tile_present = tile_count;
      tile_mean = tile_count == 0 ? 0.0 : tile_sum / static_cast<double>(tile_count);
    }
    __syncthreads();  // tile_mean and tile_present published; sum_storage free to reuse

    const double mean = tile_mean;
    double squares = 0;
    for (int k = 0; k < kItemsPerThread; ++k) {
      const size_t i = threadIdx.x + static_cast<size_t>(k) * kThreadsPerBlock;
      if (i < count) {
        const T v = x[start + i];
        const double d = Present(v) ? static_cast<double>(v) - mean : 0.0;
        squares += d * d;
      }
    }
    const double tile_m2 = SumReduce(sum_storage).Sum(squares);
    if (threadIdx.x == 0 && tile_present > 0) {
      const Partial this_tile{tile_present, mean, tile_m2, static_cast<double>(tile_lo),
                              static_cast<double>(tile_hi)};
      running = Merge(running, this_tile);
    }
    __syncthreads();  // every TempStorage and tile_mean free for the next tile
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = running;
}

ColumnMoments ToMoments(const Partial& p) {
  ColumnMoments m;
  m.count = p.count;
  m.mean = p.mean;
  m.m2 = p.m2;
  m.min = p.min;
  m.max = p.max;
  return m;
}

// Enqueues the kernel over d_x[0..n) and the copy of its partials into `host`, on `stream`;
// the caller synchronizes before reading `host`. `d_partials` holds max_blocks partials.
template <typename T>
Status LaunchMoments(const T* d_x, size_t n, int max_blocks, Partial* d_partials,
                     std::vector<Partial>& host, cudaStream_t stream) {
  const size_t tiles = (n + kTile - 1) / kTile;
  const int blocks = static_cast<int>(std::min<size_t>(tiles, max_blocks));
  MomentsKernel<T><<<blocks, kThreadsPerBlock, 0, stream>>>(d_x, n, d_partials);
  COUPLER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  host.resize(blocks);
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host.data(), d_partials, blocks * sizeof(Partial),
                                               cudaMemcpyDeviceToHost, stream));
  return Status::Ok();
}

}  // namespace

size_t MomentsPartialBytes(int blocks) { return static_cast<size_t>(blocks) * sizeof(Partial); }

template <typename T>
Status MergeDeviceMoments(const T* d_in, size_t n, int max_blocks, void* d_partials,
                          cudaStream_t stream, ColumnMoments& total) {
  std::vector<Partial> partials;
  COUPLER_RETURN_IF_ERROR(LaunchMoments(d_in, n, max_blocks, static_cast<Partial*>(d_partials),
                                        partials, stream));
  // Faults inside the kernel surface here, before any partial is trusted.
  COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  for (const Partial& p : partials) total = MergeMoments(total, ToMoments(p));
  return Status::Ok();
}
template Status MergeDeviceMoments<float>(const float*, size_t, int, void*, cudaStream_t,
                                          ColumnMoments&);
template Status MergeDeviceMoments<int32_t>(const int32_t*, size_t, int, void*, cudaStream_t,
                                            ColumnMoments&);

namespace {

template <typename T>
Result<ColumnMoments> RunMoments(const T* in, size_t n) {
  ColumnMoments total;
  if (n == 0) return total;
  const size_t chunk = std::min(n, kCudaChunkElements);
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_in, DeviceBuffer::Allocate(chunk * sizeof(T)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_partials,
                           DeviceBuffer::Allocate(MomentsPartialBytes(max_blocks)));
  COUPLER_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  for (size_t start = 0; start < n; start += chunk) {
    const size_t count = std::min(chunk, n - start);
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_in.as<T>(), in + start, count * sizeof(T),
                                                 cudaMemcpyHostToDevice, stream.get()));
    COUPLER_RETURN_IF_ERROR(MergeDeviceMoments(d_in.as<const T>(), count, max_blocks,
                                               d_partials.as<void>(), stream.get(), total));
  }
  return total;
}

}  // namespace

Result<ColumnMoments> MomentsCuda(const float* in, size_t n) { return RunMoments(in, n); }
Result<ColumnMoments> MomentsCuda(const int32_t* in, size_t n) { return RunMoments(in, n); }

}  // namespace coupler::kernels
