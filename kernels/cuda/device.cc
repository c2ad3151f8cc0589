// Device discovery through the CUDA runtime. Compiled by the host compiler; links cudart only,
// never libcuda, so the binary starts on machines without a driver and reports no devices.
#include "kernels/device.h"

#include <string>
#include <utility>

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"

namespace coupler::kernels {
namespace {

// Puts the calling thread's current device back however ListCudaDevices returns, so listing
// never moves a worker thread off the GPU it was given.
class CurrentDeviceRestorer {
 public:
  explicit CurrentDeviceRestorer(int device) : device_(device) {}
  CurrentDeviceRestorer(const CurrentDeviceRestorer&) = delete;
  CurrentDeviceRestorer& operator=(const CurrentDeviceRestorer&) = delete;
  ~CurrentDeviceRestorer() {
    if (cudaSetDevice(device_) != cudaSuccess) (void)cudaGetLastError();
  }

 private:
  int device_;
};

}  // namespace

Result<std::vector<DeviceInfo>> ListCudaDevices() {
  int count = 0;
  const cudaError_t count_error = cudaGetDeviceCount(&count);
  if (IsNoCudaDeviceError(count_error)) {
    (void)cudaGetLastError();
    return std::vector<DeviceInfo>{};
  }
  COUPLER_CUDA_RETURN_IF_ERROR(count_error);

  int previous = 0;
  COUPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&previous));
  CurrentDeviceRestorer restore(previous);

  std::vector<DeviceInfo> devices;
  devices.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    COUPLER_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, i));
    DeviceInfo info;
    info.index = i;
    info.name = prop.name;
    info.total_memory = prop.totalGlobalMem;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    char bus_id[32] = {};  // "0000:3B:00.0" and its terminator fit with room to spare
    COUPLER_CUDA_RETURN_IF_ERROR(cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), i));
    info.pci_bus_id = bus_id;
    // A device in exclusive-process mode owned by another process is busy, not broken: list
    // it with no free memory rather than failing the whole listing.
    COUPLER_CUDA_RETURN_IF_ERROR(cudaSetDevice(i));
    size_t free_bytes = 0;
    size_t total_bytes = 0;
    const cudaError_t mem_error = cudaMemGetInfo(&free_bytes, &total_bytes);
    if (mem_error == cudaErrorDevicesUnavailable) {
      (void)cudaGetLastError();
    } else {
      COUPLER_CUDA_RETURN_IF_ERROR(mem_error);
      info.free_memory = free_bytes;
    }
    devices.push_back(std::move(info));
  }
  return devices;
}

int CudaDeviceCount() {
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return n;
  }();
  return count;
}

bool HaveCudaDevice() { return CudaDeviceCount() > 0; }

Status UseCudaDevice(int index) {
  if (index < 0 || index >= CudaDeviceCount()) {
    return Unavailable("CUDA device " + std::to_string(index) + " is not visible (" +
                       std::to_string(CudaDeviceCount()) + " device(s))");
  }
  COUPLER_CUDA_RETURN_IF_ERROR(cudaSetDevice(index));
  return Status::Ok();
}

std::string CudaRuntimeVersion() {
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) {
    (void)cudaGetLastError();
    return "unknown";
  }
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string CudaDriverVersion() {
  int version = 0;
  // 0 with cudaSuccess when no driver is installed; an error when the driver is broken.
  if (cudaDriverGetVersion(&version) != cudaSuccess || version == 0) {
    (void)cudaGetLastError();
    return "none";
  }
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

bool BuiltWithCuda() { return true; }

}  // namespace coupler::kernels
