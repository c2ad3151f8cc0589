// CUDA twin of standardize: a grid-stride loop over StandardizeValue, the same float64 element
// math as the CPU twin, so the two agree bit for bit (NaN payloads aside: GPU arithmetic returns
// a canonical NaN).
#include <algorithm>
#include <cstddef>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/cuda/batch_launch.h"
#include "kernels/cuda/column_pass.h"
#include "kernels/elementwise.h"

namespace coupler::kernels {
namespace {

// `in` may equal `out`: each thread reads its element before writing it, and no thread touches
// another's, so no __restrict__ here (a device caller may pass one buffer for both).
__global__ void StandardizeKernel(const float* in, float* out, size_t n, double mean,
                                  double inv_stddev) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = StandardizeValue(in[i], mean, inv_stddev);
  }
}

}  // namespace

void LaunchStandardize(const float* d_in, float* d_out, size_t count, int blocks, int threads,
                       cudaStream_t stream, double mean, double inv_stddev) {
  StandardizeKernel<<<blocks, threads, 0, stream>>>(d_in, d_out, count, mean, inv_stddev);
}

Status StandardizeCuda(const float* in, float* out, size_t n, double mean, double inv_stddev) {
  return RunColumnPass(in, out, n,
                       [mean, inv_stddev](const float* d_in, float* d_out, size_t count,
                                          int blocks, int threads, cudaStream_t stream) {
                         LaunchStandardize(d_in, d_out, count, blocks, threads, stream, mean,
                                           inv_stddev);
                       });
}

}  // namespace coupler::kernels
