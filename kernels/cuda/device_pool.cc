// DevicePool's CUDA half: reserving and freeing the arena, and host <-> device copies.
#include "kernels/device_pool.h"

#include <string>

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"
#include "runtime/util/byte_size.h"

namespace coupler::kernels {
namespace {

// Puts the calling thread's current device back however the scope is left.
class ScopedDevice {
 public:
  ScopedDevice() {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      (void)cudaGetLastError();
      previous_ = -1;
    }
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  ~ScopedDevice() {
    if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) (void)cudaGetLastError();
  }

 private:
  int previous_ = -1;
};

}  // namespace

Result<std::unique_ptr<DevicePool>> DevicePool::Create(int device, size_t limit_bytes) {
  ScopedDevice restore;
  COUPLER_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  size_t capacity = limit_bytes;
  if (capacity == 0) {
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
    capacity = static_cast<size_t>(static_cast<double>(free_bytes) * (1.0 - kReserveFraction));
  }
  capacity -= capacity % kAlignment;
  if (capacity == 0) {
    return ResourceExhausted("out of device memory: no room for a device pool on device " +
                             std::to_string(device));
  }
  void* base = nullptr;
  const cudaError_t error = cudaMalloc(&base, capacity);
  if (error == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return ResourceExhausted("out of device memory: the device pool needs " +
                             util::FormatBytes(capacity) + " on device " +
                             std::to_string(device) + " and cudaMalloc refused it");
  }
  COUPLER_CUDA_RETURN_IF_ERROR(error);
  return std::unique_ptr<DevicePool>(new DevicePool(device, base, capacity));
}

// cudaFree fails only when the context is gone (process exit) or poisoned by an earlier error
// that its own call reported; the last-error slot is cleared so no later launch is blamed.
DevicePool::~DevicePool() {
  COUPLER_CHECK(arena_.in_use() == 0)
      << "DevicePool destroyed with " << arena_.in_use() << " bytes still allocated";
  ScopedDevice restore;
  if (cudaSetDevice(device_) != cudaSuccess || cudaFree(base_) != cudaSuccess) {
    (void)cudaGetLastError();
  }
}

Status DeviceAllocation::CopyFromHost(const void* src, size_t bytes) {
  if (bytes > bytes_) {
    return InvalidArgument("DeviceAllocation::CopyFromHost: " + std::to_string(bytes) +
                           " bytes into an allocation of " + std::to_string(bytes_));
  }
  if (bytes == 0) return Status::Ok();
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpy(data_, src, bytes, cudaMemcpyHostToDevice));
  return Status::Ok();
}

Status DeviceAllocation::CopyToHost(void* dst, size_t bytes) const {
  if (bytes > bytes_) {
    return InvalidArgument("DeviceAllocation::CopyToHost: " + std::to_string(bytes) +
                           " bytes from an allocation of " + std::to_string(bytes_));
  }
  if (bytes == 0) return Status::Ok();
  COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, data_, bytes, cudaMemcpyDeviceToHost));
  return Status::Ok();
}

}  // namespace coupler::kernels
