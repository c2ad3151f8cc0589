// CUDA twin of cast: grid-stride loops over the shared fp16/bf16 conversions, one kernel per
// format so no thread branches on the format.
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/cuda/batch_launch.h"
#include "kernels/cuda/column_pass.h"
#include "kernels/elementwise.h"

namespace coupler::kernels {
namespace {

template <ElementType kFormat>
__global__ void CastKernel(const float* __restrict__ in, uint16_t* __restrict__ out, size_t n) {
  const size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    if constexpr (kFormat == ElementType::kFloat16) {
      out[i] = CastToFp16Value(in[i]);
    } else {
      out[i] = CastToBf16Value(in[i]);
    }
  }
}

template <ElementType kFormat>
void LaunchCastAs(const float* d_in, uint16_t* d_out, size_t count, int blocks, int threads,
                  cudaStream_t stream) {
  CastKernel<kFormat><<<blocks, threads, 0, stream>>>(d_in, d_out, count);
}

}  // namespace

void LaunchCast(const float* d_in, uint16_t* d_out, size_t count, int blocks, int threads,
                cudaStream_t stream, ElementType format) {
  if (format == ElementType::kFloat16) {
    LaunchCastAs<ElementType::kFloat16>(d_in, d_out, count, blocks, threads, stream);
  } else {
    LaunchCastAs<ElementType::kBFloat16>(d_in, d_out, count, blocks, threads, stream);
  }
}

Status CastCuda(const float* in, uint16_t* out, size_t n, ElementType format) {
  return format == ElementType::kFloat16
             ? RunColumnPass(in, out, n, LaunchCastAs<ElementType::kFloat16>)
             : RunColumnPass(in, out, n, LaunchCastAs<ElementType::kBFloat16>);
}

}  // namespace coupler::kernels
