// Owned device memory: move-only, freed by the destructor, so every early return in a host
// wrapper releases what it allocated. Charged to the calling thread's GPU share, if any
// (kernels/device_share.h), so a task packed beside others on one device stays within its own.
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"
#include "kernels/device_share.h"
#include "runtime/status.h"

namespace coupler::kernels {

class DeviceBuffer {
 public:
  // `bytes` on the calling thread's current device; ResourceExhausted when it does not fit.
  // Also ResourceExhausted past the thread's GPU share.
  static Result<DeviceBuffer> Allocate(size_t bytes) {
    COUPLER_RETURN_IF_ERROR(ChargeDeviceShare(bytes));
    void* ptr = nullptr;
    if (const cudaError_t error = cudaMalloc(&ptr, bytes); error != cudaSuccess) {
      ReturnDeviceShare(bytes);
      return CudaErrorStatus(error, "cudaMalloc(&ptr, bytes)", __FILE__, __LINE__);
    }
    return DeviceBuffer(ptr, bytes);
  }

  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Release();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Release(); }

  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  DeviceBuffer(void* ptr, size_t bytes) : ptr_(ptr), bytes_(bytes) {}

  // A destructor cannot report; cudaFree fails only when the context is already gone (process
  // exit) or poisoned by an earlier error, which the call that caused it has reported. The
  // last-error slot is cleared so that stale failure is not blamed on a later launch.
  void Release() noexcept {
    if (ptr_ != nullptr) ReturnDeviceShare(bytes_);
    if (ptr_ != nullptr && cudaFree(ptr_) != cudaSuccess) (void)cudaGetLastError();
    ptr_ = nullptr;
    bytes_ = 0;
  }

  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace coupler::kernels
