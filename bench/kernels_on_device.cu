#include "bench/kernels_on_device.h"

#include <algorithm>

#include "kernels/cuda/batch_launch.h"
#include "kernels/cuda/column_pass.h"

namespace coupler::bench {

namespace {

using kernels::DeviceBuffer;
using kernels::kThreadsPerBlock;
using kernels::MaxResidentBlocks;

// One pass of an element-wise launch over all n elements on the default stream, checked and
// synchronized, so results are ready and kernel faults are reported here.
template <typename In, typename Out, typename Launch>
Status RunDevicePass(const In* d_in, Out* d_out, size_t n, const Launch& launch) {
  if (n == 0) return Status::Ok();
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  const size_t wanted = (n + kThreadsPerBlock - 1) / kThreadsPerBlock;
  const int blocks = static_cast<int>(std::min<size_t>(wanted, max_blocks));
  launch(d_in, d_out, n, blocks, kThreadsPerBlock, cudaStream_t{nullptr});
  COUPLER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(nullptr));
  return Status::Ok();
}

}  // namespace

Status StandardizeOnDevice(const float* d_in, float* d_out, size_t n, double mean,
                           double inv_stddev) {
  return RunDevicePass(d_in, d_out, n,
                       [=](const float* in, float* out, size_t count, int blocks, int threads,
                           cudaStream_t stream) {
                         kernels::LaunchStandardize(in, out, count, blocks, threads, stream, mean,
                                                    inv_stddev);
                       });
}

Status ClipOnDevice(const float* d_in, float* d_out, size_t n, float lo, float hi) {
  return RunDevicePass(d_in, d_out, n,
                       [=](const float* in, float* out, size_t count, int blocks, int threads,
                           cudaStream_t stream) {
                         kernels::LaunchClip(in, out, count, blocks, threads, stream, lo, hi);
                       });
}

Status CastOnDevice(const float* d_in, uint16_t* d_out, size_t n, ElementType format) {
  return RunDevicePass(d_in, d_out, n,
                       [=](const float* in, uint16_t* out, size_t count, int blocks, int threads,
                           cudaStream_t stream) {
                         kernels::LaunchCast(in, out, count, blocks, threads, stream, format);
                       });
}

Result<kernels::ColumnMoments> MomentsOnDevice(const float* d_in, size_t n) {
  kernels::ColumnMoments total;
  if (n == 0) return total;
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_partials,
                           DeviceBuffer::Allocate(kernels::MomentsPartialBytes(max_blocks)));
  COUPLER_RETURN_IF_ERROR(kernels::MergeDeviceMoments(d_in, n, max_blocks, d_partials.as<void>(),
                                                      nullptr, total));
  return total;
}

Result<size_t> FilterMapOnDevice(const float* d_a, const float* d_b, size_t n, float threshold,
                                 uint8_t* d_keep, float* d_value) {
  if (n == 0) return size_t{0};
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_kept, DeviceBuffer::Allocate(sizeof(int64_t)));
  kernels::CubScratch scratch;
  COUPLER_RETURN_IF_ERROR(kernels::ReserveFilterMap(scratch, n));
  COUPLER_RETURN_IF_ERROR(kernels::LaunchFilterMap(d_a, d_b, n, threshold, d_keep, d_value,
                                                   d_kept.as<int64_t>(), max_blocks, scratch,
                                                   nullptr));
  return kernels::KeptCount(d_kept.as<const int64_t>(), nullptr);
}

}  // namespace coupler::bench
