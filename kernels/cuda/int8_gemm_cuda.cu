// CUDA twin of int8_gemm: each thread sums one output element's products in int32 — exact, so
// the order is free — from 16 x 16 tiles of activations and weights staged in shared memory,
// then converts once and multiplies by its column's scale, as the CPU twin does: the same bits.
// The activations travel a chunk of rows at a time; the weights and scales once per call.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_stream.h"
#include "kernels/cuda/device_buffer.h"

namespace coupler::kernels {
namespace {

constexpr int kTile = 16;

template <typename A>
__global__ void Int8GemmKernel(const A* __restrict__ a, size_t m, size_t k,
                               const int8_t* __restrict__ w, size_t n,
                               const float* __restrict__ scale, float* __restrict__ c) {
  __shared__ int32_t a_tile[kTile][kTile];
  __shared__ int32_t w_tile[kTile][kTile];
  const size_t row = static_cast<size_t>(blockIdx.y) * kTile + threadIdx.y;
  const size_t col = static_cast<size_t>(blockIdx.x) * kTile + threadIdx.x;
  // Weight row for this block's columns, loaded transposed: w_tile[p][x] = w[col_of_x][p].
  const size_t w_row = static_cast<size_t>(blockIdx.x) * kTile + threadIdx.y;
  int32_t acc = 0;
  for (size_t p0 = 0; p0 < k; p0 += kTile) {
    const size_t pa = p0 + threadIdx.x;
    a_tile[threadIdx.y][threadIdx.x] = row < m && pa < k ? static_cast<int32_t>(a[row * k + pa]) : 0;
    w_tile[threadIdx.x][threadIdx.y] =
        w_row < n && pa < k ? static_cast<int32_t>(w[w_row * k + pa]) : 0;
    __syncthreads();
    for (int p = 0; p < kTile; ++p) acc += a_tile[threadIdx.y][p] * w_tile[p][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = __fmul_rn(static_cast<float>(acc), scale[col]);
}

}  // namespace

Status Int8GemmCuda(const void* a, bool a_signed, size_t m, size_t k, const int8_t* w, size_t n,
                    const float* scale, float* c) {
  // A chunk's output takes what one float buffer of kCudaChunkElements would (128 MiB).
  // and no more rows than a grid's second dimension (65535 blocks) covers.
  const size_t chunk = std::min({m, std::max<size_t>(kCudaChunkElements / std::max(n, k), 1),
                                 size_t{65535} * kTile});
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_a, DeviceBuffer::Allocate(chunk * k));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_w, DeviceBuffer::Allocate(n * k));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_scale, DeviceBuffer::Allocate(n * sizeof(float)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_c, DeviceBuffer::Allocate(chunk * n * sizeof(float)));
  COUPLER_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  COUPLER_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(d_w.as<int8_t>(), w, n * k, cudaMemcpyHostToDevice, stream.get()));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_scale.as<float>(), scale, n * sizeof(float),
                                               cudaMemcpyHostToDevice, stream.get()));
  const auto* bytes = static_cast<const uint8_t*>(a);
  for (size_t start = 0; start < m; start += chunk) {
    const size_t rows = std::min(chunk, m - start);
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_a.as<uint8_t>(), bytes + start * k, rows * k,
                                                 cudaMemcpyHostToDevice, stream.get()));
    const dim3 threads(kTile, kTile);
    const dim3 blocks(static_cast<unsigned>((n + kTile - 1) / kTile),
                      static_cast<unsigned>((rows + kTile - 1) / kTile));
    if (a_signed) {
      Int8GemmKernel<<<blocks, threads, 0, stream.get()>>>(d_a.as<const int8_t>(), rows, k,
                                                           d_w.as<const int8_t>(), n,
                                                           d_scale.as<const float>(),
                                                           d_c.as<float>());
    } else {
      Int8GemmKernel<<<blocks, threads, 0, stream.get()>>>(d_a.as<const uint8_t>(), rows, k,
                                                           d_w.as<const int8_t>(), n,
                                                           d_scale.as<const float>(),
                                                           d_c.as<float>());
    }
    COUPLER_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(c + start * n, d_c.as<float>(),
                                                 rows * n * sizeof(float),
                                                 cudaMemcpyDeviceToHost, stream.get()));
    COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  }
  return Status::Ok();
}

}  // namespace coupler::kernels
