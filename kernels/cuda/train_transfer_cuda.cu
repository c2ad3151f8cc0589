// Moving training buffers between host and device, zero fills, and the gradient reducer's
// per-bucket math on device memory (train_kernels_cuda.h). The bucket kernels compute what the
// reducer's host loops compute, element by element, so a CUDA run reduces to the same values.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/train_launch.h"
#include "kernels/train_elementwise.h"
#include "kernels/train_kernels_cuda.h"

namespace coupler::kernels {
namespace {

// IEEE division (nvcc's default -prec-div=true), as the host path's divps.
__global__ void DivideKernel(float* out, const float* in, size_t n, float divisor) {
  for (size_t i = FirstIndex(); i < n; i += GridStride()) out[i] = in[i] / divisor;
}

template <ElementType kStorage>
__global__ void PackHalfKernel(const float* __restrict__ in, float scale,
                               uint16_t* __restrict__ out, size_t n) {
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    out[i] = StorageElement<kStorage>::Store(in[i] * scale);
  }
}

template <ElementType kStorage>
__global__ void UnpackHalfKernel(const uint16_t* __restrict__ in, float* __restrict__ out,
                                 size_t n) {
  for (size_t i = FirstIndex(); i < n; i += GridStride()) {
    out[i] = StorageElement<kStorage>::Load(in[i]);
  }
}

Status NotHalf(const char* op) {
  return InvalidArgument(std::string(op) + ": the wire storage must be fp16 or bf16");
}

}  // namespace

Status CopyHostToDeviceCuda(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (dst == nullptr || src == nullptr) return NullPointer("CopyHostToDeviceCuda");
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
  return Status::Ok();
}

Status CopyDeviceToHostCuda(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (dst == nullptr || src == nullptr) return NullPointer("CopyDeviceToHostCuda");
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
  return Status::Ok();
}

Status FillZeroCuda(void* dst, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (dst == nullptr) return NullPointer("FillZeroCuda");
  // Enqueued on the legacy default stream, ordered before the kernels that read the buffer.
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemset(dst, 0, bytes));
  return Status::Ok();
}

Status DivideCuda(float* out, const float* in, size_t n, float divisor) {
  if (n == 0) return Status::Ok();
  if (out == nullptr || in == nullptr) return NullPointer("DivideCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  DivideKernel<<<blocks, kThreadsPerBlock>>>(out, in, n, divisor);
  return CheckLaunch("DivideKernel");
}

Status PackHalfCuda(const float* in, float scale, uint16_t* out, size_t n, ElementType storage) {
  if (n == 0) return Status::Ok();
  if (in == nullptr || out == nullptr) return NullPointer("PackHalfCuda");
  if (storage == ElementType::kFloat32) return NotHalf("PackHalfCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  if (storage == ElementType::kFloat16) {
    PackHalfKernel<ElementType::kFloat16><<<blocks, kThreadsPerBlock>>>(in, scale, out, n);
  } else {
    PackHalfKernel<ElementType::kBFloat16><<<blocks, kThreadsPerBlock>>>(in, scale, out, n);
  }
  return CheckLaunch("PackHalfKernel");
}

Status UnpackHalfCuda(const uint16_t* in, float* out, size_t n, ElementType storage) {
  if (n == 0) return Status::Ok();
  if (in == nullptr || out == nullptr) return NullPointer("UnpackHalfCuda");
  if (storage == ElementType::kFloat32) return NotHalf("UnpackHalfCuda");
  COUPLER_ASSIGN_OR_RETURN(const int blocks, BlocksFor(n));
  if (storage == ElementType::kFloat16) {
    UnpackHalfKernel<ElementType::kFloat16><<<blocks, kThreadsPerBlock>>>(in, out, n);
  } else {
    UnpackHalfKernel<ElementType::kBFloat16><<<blocks, kThreadsPerBlock>>>(in, out, n);
  }
  return CheckLaunch("UnpackHalfKernel");
}

}  // namespace coupler::kernels
