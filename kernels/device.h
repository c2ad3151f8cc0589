// What CUDA hardware this process can use. CUDA-free: the same declarations link against
// kernels/cuda/device.cc (CUDA builds) or kernels/nocuda/device.cc (CPU-only builds), so
// callers such as `coupler doctor` and the worker's heartbeat never need CUDA headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.h"

namespace coupler::kernels {

struct DeviceInfo {
  int index = 0;  // the CUDA ordinal, as CUDA_VISIBLE_DEVICES renumbers it
  std::string name;
  uint64_t total_memory = 0;  // bytes
  uint64_t free_memory = 0;   // bytes, at the time of the call
  int compute_major = 0;
  int compute_minor = 0;
  // "domain:bus:device.function" in hex, e.g. "0000:3B:00.0": what NVML finds the same device
  // by, since NVML numbers devices in its own order and ignores CUDA_VISIBLE_DEVICES.
  std::string pci_bus_id;
};

// Every visible CUDA device. No driver, no device, a stub libcuda or a CPU-only build all
// give an empty list, not an error: a machine without a GPU is a normal machine. An error
// Status (naming the CUDA call and its message) means a driver or device is present but broken.
// Reading free memory creates each device's primary context (a one-time cost per device).
Result<std::vector<DeviceInfo>> ListCudaDevices();

// True when at least one CUDA device is usable. Cheap after the first call (cached: CUDA reads
// CUDA_VISIBLE_DEVICES once per process, so the answer cannot change).
bool HaveCudaDevice();

// The CUDA runtime this binary uses, e.g. "13.0"; "none" when built without CUDA.
std::string CudaRuntimeVersion();

// The newest CUDA version the installed driver supports, e.g. "13.0"; "none" without a driver
// (or in a CPU-only build).
std::string CudaDriverVersion();

// Whether this build includes the CUDA kernels (COUPLER_WITH_CUDA).
bool BuiltWithCuda();

// The number of visible CUDA devices (0 without a driver, a device or CUDA in the build).
int CudaDeviceCount();

// Makes `index` the calling thread's current device, so the CUDA twins it calls next run
// there (each worker task thread and each training rank picks its own). Unavailable without
// CUDA or for an index past CudaDeviceCount().
Status UseCudaDevice(int index);

}  // namespace coupler::kernels
