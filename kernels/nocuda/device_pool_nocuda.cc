// DevicePool in a CPU-only build: there is no device to reserve an arena on.
#include "kernels/device_pool.h"

#include <string>

namespace coupler::kernels {

Result<std::unique_ptr<DevicePool>> DevicePool::Create(int device, size_t /*limit_bytes*/) {
  return Unavailable("DevicePool::Create(device " + std::to_string(device) +
                     "): coupler was built without CUDA");
}

// Never constructed in this build (Create always fails), but the declarations must link.
DevicePool::~DevicePool() = default;

Status DeviceAllocation::CopyFromHost(const void* /*src*/, size_t /*bytes*/) {
  return Unavailable("DeviceAllocation::CopyFromHost: coupler was built without CUDA");
}

Status DeviceAllocation::CopyToHost(void* /*dst*/, size_t /*bytes*/) const {
  return Unavailable("DeviceAllocation::CopyToHost: coupler was built without CUDA");
}

}  // namespace coupler::kernels
