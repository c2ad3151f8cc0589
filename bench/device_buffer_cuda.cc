#include "bench/device_buffer.h"

#include <utility>

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"

namespace coupler::bench {

Result<BenchDeviceBuffer> BenchDeviceBuffer::Allocate(size_t bytes) {
  void* ptr = nullptr;
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMalloc(&ptr, bytes));
  return BenchDeviceBuffer(ptr, bytes);
}

Result<BenchDeviceBuffer> BenchDeviceBuffer::CopyOf(const void* host, size_t bytes) {
  COUPLER_ASSIGN_OR_RETURN(BenchDeviceBuffer buffer, Allocate(bytes));
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpy(buffer.ptr_, host, bytes, cudaMemcpyHostToDevice));
  return buffer;
}

BenchDeviceBuffer::BenchDeviceBuffer(BenchDeviceBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

BenchDeviceBuffer& BenchDeviceBuffer::operator=(BenchDeviceBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

BenchDeviceBuffer::~BenchDeviceBuffer() { Release(); }

// As DeviceBuffer::Release: a destructor cannot report, and the stale error is cleared.
void BenchDeviceBuffer::Release() noexcept {
  if (ptr_ != nullptr && cudaFree(ptr_) != cudaSuccess) (void)cudaGetLastError();
  ptr_ = nullptr;
  bytes_ = 0;
}

Status CopyDeviceToDevice(void* dst, const void* src, size_t bytes) {
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
  // cudaMemcpy between device pointers may return before the copy ends.
  COUPLER_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return Status::Ok();
}

}  // namespace coupler::bench
