// A stand-in for the driver's libnvidia-ml.so.1, so gpu_monitor_test drives the worker's NVML
// session (dlopen, init, lookups, samples, errors) on machines without a driver: three GPUs with
// fixed figures, the third in MIG mode (NVML reads no utilization there). Only the entry points
// worker/gpu_monitor.cc resolves, with NVML's C signatures and return codes; every call but
// nvmlInit_v2 fails with NVML_ERROR_UNINITIALIZED outside a session, as the real one does.
#include <cstdio>
#include <cstring>

namespace {

constexpr int kSuccess = 0;
constexpr int kUninitialized = 1;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kNotFound = 6;
constexpr int kInsufficientSize = 7;

constexpr unsigned long long kGiB = 1ull << 30;

struct Utilization {
  unsigned gpu;
  unsigned memory;
};
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

int sessions = 0;

}  // namespace

// NVML's opaque device, defined here: its handles point into `devices`.
struct nvmlDevice_st {
  unsigned domain, bus, device, function;
  unsigned utilization;
  unsigned long long used, total;
  bool mig;
};

namespace {

// In NVML's own (PCI) order.
nvmlDevice_st devices[] = {
    {0, 0x3B, 0, 0, 37, 12 * kGiB, 80 * kGiB, false},
    {0, 0x86, 0, 0, 85, 70 * kGiB, 80 * kGiB, false},
    {0, 0xC1, 0, 0, 0, 1 * kGiB, 80 * kGiB, true},
};
constexpr unsigned kDeviceCount = sizeof(devices) / sizeof(devices[0]);

}  // namespace

extern "C" {

int nvmlInit_v2() {
  ++sessions;
  return kSuccess;
}

int nvmlShutdown() {
  if (sessions == 0) return kUninitialized;
  --sessions;
  return kSuccess;
}

const char* nvmlErrorString(int result) {
  switch (result) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kNotFound: return "Not Found";
    case kInsufficientSize: return "Insufficient Size";
    default: return "Unknown Error";
  }
}

int nvmlSystemGetDriverVersion(char* version, unsigned length) {
  if (sessions == 0) return kUninitialized;
  const char kVersion[] = "580.65.06";
  if (version == nullptr || length < sizeof(kVersion)) return kInsufficientSize;
  std::memcpy(version, kVersion, sizeof(kVersion));
  return kSuccess;
}

int nvmlDeviceGetCount_v2(unsigned* count) {
  if (sessions == 0) return kUninitialized;
  if (count == nullptr) return kInvalidArgument;
  *count = kDeviceCount;
  return kSuccess;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_st** device) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || index >= kDeviceCount) return kInvalidArgument;
  *device = &devices[index];
  return kSuccess;
}

// Hex fields as NVML reads them, so "0000:3b:00.0" and "00000000:3B:00.0" name one device.
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_st** device) {
  if (sessions == 0) return kUninitialized;
  unsigned domain = 0, bus = 0, dev = 0, function = 0;
  if (bus_id == nullptr || device == nullptr ||
      std::sscanf(bus_id, "%x:%x:%x.%x", &domain, &bus, &dev, &function) != 4) {
    return kInvalidArgument;
  }
  for (nvmlDevice_st& d : devices) {
    if (d.domain == domain && d.bus == bus && d.device == dev && d.function == function) {
      *device = &d;
      return kSuccess;
    }
  }
  return kNotFound;
}

int nvmlDeviceGetUtilizationRates(nvmlDevice_st* device, Utilization* utilization) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || utilization == nullptr) return kInvalidArgument;
  if (device->mig) return kNotSupported;
  utilization->gpu = device->utilization;
  utilization->memory = device->utilization / 2;
  return kSuccess;
}

int nvmlDeviceGetMemoryInfo(nvmlDevice_st* device, Memory* memory) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || memory == nullptr) return kInvalidArgument;
  memory->total = device->total;
  memory->used = device->used;
  memory->free = device->total - device->used;
  return kSuccess;
}

}  // extern "C"
