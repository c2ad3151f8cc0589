// Device discovery in a CPU-only build: no CUDA, so no devices, and that is not an error.
#include "kernels/device.h"

#include <string>

namespace coupler::kernels {

Result<std::vector<DeviceInfo>> ListCudaDevices() { return std::vector<DeviceInfo>{}; }

bool HaveCudaDevice() { return false; }

std::string CudaRuntimeVersion() { return "none"; }

std::string CudaDriverVersion() { return "none"; }

bool BuiltWithCuda() { return false; }

int CudaDeviceCount() { return 0; }

Status UseCudaDevice(int index) {
  return Unavailable("CUDA device " + std::to_string(index) +
                     " requested, but coupler was built without CUDA");
}

}  // namespace coupler::kernels
