// A stand-in for the driver's libnvidia-ml.so.1, so gpu_monitor_test drives the worker's NVML
// session (dlopen, init, lookups, samples, health, XID events, errors) on machines without a
// driver: three GPUs with fixed figures, the third in MIG mode (NVML reads no utilization there)
// and without ECC. Only the entry points worker/gpu_monitor.cc resolves, with NVML's C
// signatures and return codes; every call but nvmlInit_v2 fails with NVML_ERROR_UNINITIALIZED
// outside a session, as the real one does. Two hooks a test finds with dlsym change what it
// reports: fake_nvml_set_health (temperature, throttle reasons, ECC count) and fake_nvml_raise_xid
// (an XID event for every event set the device is registered on).
#include <cstdio>
#include <cstring>

namespace {

constexpr int kSuccess = 0;
constexpr int kUninitialized = 1;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;
constexpr int kNotFound = 6;
constexpr int kInsufficientSize = 7;
constexpr int kTimeout = 10;
constexpr unsigned long long kXidCritical = 0x8;

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
  bool mig;  // also: no ECC
  const char* uuid;
  unsigned temperature;
  unsigned power_mw, power_limit_mw;
  unsigned long long throttle;
  unsigned long long ecc_uncorrected;
};

struct EventData {  // nvmlEventData_t
  nvmlDevice_st* device;
  unsigned long long event_type;
  unsigned long long event_data;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};

// NVML's opaque event set: the devices registered on it and the events not read yet.
struct nvmlEventSet_st {
  nvmlDevice_st* registered[8];
  unsigned registered_count;
  EventData pending[64];
  unsigned pending_count;
  bool live;
};

namespace {

// In NVML's own (PCI) order.
nvmlDevice_st devices[] = {
    {0, 0x3B, 0, 0, 37, 12 * kGiB, 80 * kGiB, false, "GPU-3b000000-0000-0000-0000-000000000000",
     52, 310'000, 700'000, 0, 0},
    {0, 0x86, 0, 0, 85, 70 * kGiB, 80 * kGiB, false, "GPU-86000000-0000-0000-0000-000000000000",
     67, 655'000, 700'000, 0x4, 0},
    {0, 0xC1, 0, 0, 0, 1 * kGiB, 80 * kGiB, true, "GPU-c1000000-0000-0000-0000-000000000000",
     40, 90'000, 700'000, 0, 0},
};
constexpr unsigned kDeviceCount = sizeof(devices) / sizeof(devices[0]);

nvmlEventSet_st event_sets[4];

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

int nvmlDeviceGetUUID(nvmlDevice_st* device, char* uuid, unsigned length) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || uuid == nullptr) return kInvalidArgument;
  if (std::strlen(device->uuid) + 1 > length) return kInsufficientSize;
  std::strcpy(uuid, device->uuid);
  return kSuccess;
}

int nvmlDeviceGetTemperature(nvmlDevice_st* device, int sensor, unsigned* temperature) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || temperature == nullptr || sensor != 0) return kInvalidArgument;
  *temperature = device->temperature;
  return kSuccess;
}

int nvmlDeviceGetPowerUsage(nvmlDevice_st* device, unsigned* power) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || power == nullptr) return kInvalidArgument;
  *power = device->power_mw;
  return kSuccess;
}

int nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_st* device, unsigned* limit) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || limit == nullptr) return kInvalidArgument;
  *limit = device->power_limit_mw;
  return kSuccess;
}

int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_st* device, unsigned long long* reasons) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || reasons == nullptr) return kInvalidArgument;
  *reasons = device->throttle;
  return kSuccess;
}

int nvmlDeviceGetTotalEccErrors(nvmlDevice_st* device, int error_type, int counter_type,
                                unsigned long long* count) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || count == nullptr || error_type != 1 || counter_type != 0) {
    return kInvalidArgument;
  }
  if (device->mig) return kNotSupported;
  *count = device->ecc_uncorrected;
  return kSuccess;
}

int nvmlEventSetCreate(nvmlEventSet_st** set) {
  if (sessions == 0) return kUninitialized;
  if (set == nullptr) return kInvalidArgument;
  for (nvmlEventSet_st& s : event_sets) {
    if (s.live) continue;
    s = nvmlEventSet_st{};
    s.live = true;
    *set = &s;
    return kSuccess;
  }
  return kInsufficientSize;
}

int nvmlDeviceRegisterEvents(nvmlDevice_st* device, unsigned long long types, nvmlEventSet_st* set) {
  if (sessions == 0) return kUninitialized;
  if (device == nullptr || set == nullptr || !set->live || types != kXidCritical) {
    return kInvalidArgument;
  }
  if (device->mig) return kNotSupported;  // as for a vGPU: no events, the rest still sampled
  if (set->registered_count == 8) return kInsufficientSize;
  set->registered[set->registered_count++] = device;
  return kSuccess;
}

int nvmlEventSetWait_v2(nvmlEventSet_st* set, EventData* data, unsigned /*timeout_ms*/) {
  if (sessions == 0) return kUninitialized;
  if (set == nullptr || data == nullptr || !set->live) return kInvalidArgument;
  if (set->pending_count == 0) return kTimeout;
  *data = set->pending[0];
  for (unsigned i = 1; i < set->pending_count; ++i) set->pending[i - 1] = set->pending[i];
  --set->pending_count;
  return kSuccess;
}

int nvmlEventSetFree(nvmlEventSet_st* set) {
  if (set == nullptr || !set->live) return kInvalidArgument;
  set->live = false;
  return kSuccess;
}

// Test hooks, not NVML's.
void fake_nvml_set_health(unsigned nvml_index, unsigned temperature, unsigned long long throttle,
                          unsigned long long ecc_uncorrected) {
  if (nvml_index >= kDeviceCount) return;
  devices[nvml_index].temperature = temperature;
  devices[nvml_index].throttle = throttle;
  devices[nvml_index].ecc_uncorrected = ecc_uncorrected;
}

void fake_nvml_raise_xid(unsigned nvml_index, unsigned long long xid) {
  if (nvml_index >= kDeviceCount) return;
  for (nvmlEventSet_st& s : event_sets) {
    if (!s.live) continue;
    for (unsigned i = 0; i < s.registered_count; ++i) {
      if (s.registered[i] == &devices[nvml_index] && s.pending_count < 64) {
        s.pending[s.pending_count++] = {&devices[nvml_index], kXidCritical, xid, 0, 0};
      }
    }
  }
}

}  // extern "C"
