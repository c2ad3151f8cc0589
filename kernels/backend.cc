#include "kernels/backend.h"

#include "kernels/device.h"

namespace coupler::kernels {

std::string_view BackendName(Backend backend) {
  switch (backend) {
    case Backend::kCpu: return "cpu";
    case Backend::kCuda: return "cuda";
  }
  return "unknown";
}

Backend PickBackend() { return HaveCudaDevice() ? Backend::kCuda : Backend::kCpu; }

}  // namespace coupler::kernels
