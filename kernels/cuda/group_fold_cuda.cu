// CUDA twin of group_fold. The fold is sequential within a group (Welford's update depends on
// the order of the values), so the device parallelizes across groups: a chunk of rows is
// sorted by group with CUB's radix sort, which is stable and so keeps each group's values in
// row order; a scan of the per-group counts gives where each group's values start; then one
// thread per group folds its values in order with the CPU twin's update (relational::FoldMoment,
// rounded op by op — no FMA — through shuffle_math.h). Each group's state carries from one chunk
// to the next, so the result is the CPU's, bit for bit. A group holding most rows folds on one
// thread: correct, not fast. The state arrays come in and go back whole (the host keeps its
// copy until the fold succeeded: kernels/group_fold.cc).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/cuda/batch_launch.h"
#include "kernels/cuda/column_pass.h"
#include "runtime/relational/shuffle_math.h"

namespace coupler::kernels {
namespace {

// Rows per chunk: group ids and values, in and sorted, 24 bytes a row (192 MiB at most).
constexpr size_t kFoldChunkRows = kCudaChunkElements / 4;

// Counts each group's rows and renumbers the skipped rows (kMissingRow) as `groups`, so they
// sort after every group and the sort needs only the bits that number the groups.
__global__ void CountGroupsKernel(uint32_t* __restrict__ group, size_t count, uint32_t groups,
                                  uint32_t* __restrict__ counts) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const uint32_t g = group[i];
    if (g == relational::kMissingRow) {
      group[i] = groups;
    } else {
      atomicAdd(&counts[g], 1u);
    }
  }
}

// The per-group state on the device, and the fold of one group's values in row order.
struct MomentsOnDevice {
  int64_t* n;
  double* sum;
  double* mean;
  double* m2;
  __device__ void Fold(size_t g, const double* xs, uint32_t count) const {
    int64_t cn = n[g];
    double s = sum[g], mu = mean[g], q = m2[g];
    for (uint32_t i = 0; i < count; ++i) relational::FoldMoment(cn, s, mu, q, xs[i]);
    n[g] = cn;
    sum[g] = s;
    mean[g] = mu;
    m2[g] = q;
  }
};

struct SumsOnDevice {
  int64_t* n;
  int64_t* sum;
  __device__ void Fold(size_t g, const int64_t* xs, uint32_t count) const {
    int64_t cn = n[g], s = sum[g];
    for (uint32_t i = 0; i < count; ++i) relational::FoldSum(cn, s, xs[i]);
    n[g] = cn;
    sum[g] = s;
  }
};

template <typename State, typename T>
__global__ void FoldGroupsKernel(State state, const T* __restrict__ sorted,
                                 const uint32_t* __restrict__ offsets,
                                 const uint32_t* __restrict__ counts, size_t groups) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t g = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    if (counts[g] != 0) state.Fold(g, sorted + offsets[g], counts[g]);
  }
}

// The per-group state arrays between the host and the device, `groups` elements each.
class StateArrays {
 public:
  StateArrays(size_t groups, cudaStream_t stream) : groups_(groups), stream_(stream) {}

  template <typename T>
  Result<DeviceBuffer> Upload(const T* host) const {
    COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d, DeviceBuffer::Allocate(groups_ * sizeof(T)));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d.as<T>(), host, groups_ * sizeof(T),
                                                 cudaMemcpyHostToDevice, stream_));
    return std::move(d);  // explicit: nvcc does not move into a converting Result on return
  }

  template <typename T>
  Status Download(const DeviceBuffer& d, T* host) const {
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host, d.as<T>(), groups_ * sizeof(T),
                                                 cudaMemcpyDeviceToHost, stream_));
    return Status::Ok();
  }

 private:
  size_t groups_;
  cudaStream_t stream_;
};

// Folds x[0..n) into `state` (already on the device) a chunk at a time; synchronized on return.
template <typename T, typename State>
Status FoldChunks(const uint32_t* group, const T* x, size_t n, size_t groups, State state,
                  cudaStream_t stream) {
  const size_t chunk = std::min(n, kFoldChunkRows);
  const auto group_count = static_cast<uint32_t>(groups);
  // Bits that number the groups and the skipped rows' `groups`.
  const int bits = std::max(1, static_cast<int>(std::bit_width(group_count)));
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_group, DeviceBuffer::Allocate(chunk * sizeof(uint32_t)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_group_sorted, DeviceBuffer::Allocate(chunk * sizeof(uint32_t)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_x, DeviceBuffer::Allocate(chunk * sizeof(T)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_x_sorted, DeviceBuffer::Allocate(chunk * sizeof(T)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_counts, DeviceBuffer::Allocate(groups * sizeof(uint32_t)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_offsets, DeviceBuffer::Allocate(groups * sizeof(uint32_t)));
  CubScratch sort_scratch, scan_scratch;
  COUPLER_RETURN_IF_ERROR(scan_scratch.Reserve([groups](void* temp, size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, static_cast<const uint32_t*>(nullptr),
                                         static_cast<uint32_t*>(nullptr),
                                         static_cast<int64_t>(groups));
  }));
  const size_t group_blocks = std::min<size_t>((groups + kThreadsPerBlock - 1) / kThreadsPerBlock,
                                               max_blocks);
  for (size_t start = 0; start < n; start += chunk) {
    const size_t count = std::min(chunk, n - start);
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_group.as<uint32_t>(), group + start,
                                                 count * sizeof(uint32_t), cudaMemcpyHostToDevice,
                                                 stream));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_x.as<T>(), x + start, count * sizeof(T),
                                                 cudaMemcpyHostToDevice, stream));
    COUPLER_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(d_counts.as<uint32_t>(), 0, groups * sizeof(uint32_t), stream));
    const size_t row_blocks = std::min<size_t>((count + kThreadsPerBlock - 1) / kThreadsPerBlock,
                                               max_blocks);
    CountGroupsKernel<<<static_cast<int>(row_blocks), kThreadsPerBlock, 0, stream>>>(
        d_group.as<uint32_t>(), count, group_count, d_counts.as<uint32_t>());
    COUPLER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    auto sort = [&](void* temp, size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(temp, bytes, d_group.as<const uint32_t>(),
                                             d_group_sorted.as<uint32_t>(), d_x.as<const T>(),
                                             d_x_sorted.as<T>(), static_cast<int64_t>(count), 0,
                                             bits, stream);
    };
    COUPLER_RETURN_IF_ERROR(sort_scratch.Reserve(sort));
    COUPLER_CUDA_RETURN_IF_ERROR(sort(sort_scratch.temp(), sort_scratch.bytes()));
    COUPLER_CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(
        scan_scratch.temp(), scan_scratch.bytes(), d_counts.as<const uint32_t>(),
        d_offsets.as<uint32_t>(), static_cast<int64_t>(groups), stream));
    FoldGroupsKernel<<<static_cast<int>(group_blocks), kThreadsPerBlock, 0, stream>>>(
        state, d_x_sorted.as<const T>(), d_offsets.as<const uint32_t>(),
        d_counts.as<const uint32_t>(), groups);
    COUPLER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    // Faults of this chunk's kernels surface before the next chunk reuses the buffers.
    COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  }
  return Status::Ok();
}

}  // namespace

Status FoldMomentsCuda(const uint32_t* group, const double* x, size_t n, size_t groups,
                       int64_t* count, double* sum, double* mean, double* m2) {
  COUPLER_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  StateArrays arrays(groups, stream.get());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_n, arrays.Upload(count));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_sum, arrays.Upload(sum));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_mean, arrays.Upload(mean));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_m2, arrays.Upload(m2));
  const MomentsOnDevice on_device{d_n.as<int64_t>(), d_sum.as<double>(), d_mean.as<double>(),
                                  d_m2.as<double>()};
  COUPLER_RETURN_IF_ERROR(FoldChunks(group, x, n, groups, on_device, stream.get()));
  COUPLER_RETURN_IF_ERROR(arrays.Download(d_n, count));
  COUPLER_RETURN_IF_ERROR(arrays.Download(d_sum, sum));
  COUPLER_RETURN_IF_ERROR(arrays.Download(d_mean, mean));
  COUPLER_RETURN_IF_ERROR(arrays.Download(d_m2, m2));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  return Status::Ok();
}

Status FoldSumsCuda(const uint32_t* group, const int64_t* x, size_t n, size_t groups,
                    int64_t* count, int64_t* sum) {
  COUPLER_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  StateArrays arrays(groups, stream.get());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_n, arrays.Upload(count));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_sum, arrays.Upload(sum));
  const SumsOnDevice on_device{d_n.as<int64_t>(), d_sum.as<int64_t>()};
  COUPLER_RETURN_IF_ERROR(FoldChunks(group, x, n, groups, on_device, stream.get()));
  COUPLER_RETURN_IF_ERROR(arrays.Download(d_n, count));
  COUPLER_RETURN_IF_ERROR(arrays.Download(d_sum, sum));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  return Status::Ok();
}

}  // namespace coupler::kernels
