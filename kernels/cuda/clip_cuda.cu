// CUDA twin of clip: a grid-stride loop over ClipValue, the same element math as the CPU twin.
#include <cstddef>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/cuda/batch_launch.h"
#include "kernels/cuda/column_pass.h"
#include "kernels/elementwise.h"

namespace coupler::kernels {
namespace {

__global__ void ClipKernel(const float* __restrict__ in, float* __restrict__ out, size_t n,
                           float lo, float hi) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = ClipValue(in[i], lo, hi);
  }
}

}  // namespace

void LaunchClip(const float* d_in, float* d_out, size_t count, int blocks, int threads,
                cudaStream_t stream, float lo, float hi) {
  ClipKernel<<<blocks, threads, 0, stream>>>(d_in, d_out, count, lo, hi);
}

Status ClipCuda(const float* in, float* out, size_t n, float lo, float hi) {
  // Host `in` may equal host `out`: each chunk is copied in before its result is copied back,
  // and the device buffers are distinct, so __restrict__ holds on the device.
  return RunColumnPass(in, out, n,
                       [lo, hi](const float* d_in, float* d_out, size_t count, int blocks,
                                int threads, cudaStream_t stream) {
                         LaunchClip(d_in, d_out, count, blocks, threads, stream, lo, hi);
                       });
}

}  // namespace coupler::kernels
