#include "worker/gpu_monitor.h"

#include <dlfcn.h>

#include <type_traits>
#include <utility>

#include "runtime/logging.h"
#include "runtime/pool/gpu_health.h"

namespace coupler::worker {
namespace {

// The few NVML declarations used, as nvml.h has them (no NVML header is needed to build).
using NvmlReturn = int;  // nvmlReturn_t
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr unsigned kDriverVersionBufferSize = 80;  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

struct NvmlUtilization {  // nvmlUtilization_t
  unsigned gpu;     // percent of the sample period a kernel ran
  unsigned memory;  // percent of it device memory was read or written
};
struct NvmlMemory {  // nvmlMemory_t (v1)
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
constexpr NvmlReturn kNvmlTimeout = 10;                   // NVML_ERROR_TIMEOUT
constexpr unsigned kUuidBufferSize = 96;                  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr int kTemperatureGpu = 0;                        // NVML_TEMPERATURE_GPU
constexpr int kMemoryErrorUncorrected = 1;                // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;                           // NVML_VOLATILE_ECC
constexpr unsigned long long kEventXidCritical = 0x8;     // nvmlEventTypeXidCriticalError
struct NvmlEventData {  // nvmlEventData_t
  nvmlDevice_st* device;
  unsigned long long event_type;
  unsigned long long event_data;  // the XID, for an XID event
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};

}  // namespace

struct NvmlSession::Api {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*shutdown)() = nullptr;
  const char* (*error_string)(NvmlReturn) = nullptr;
  NvmlReturn (*driver_version)(char*, unsigned) = nullptr;
  NvmlReturn (*device_count)(unsigned*) = nullptr;
  NvmlReturn (*by_index)(unsigned, Device*) = nullptr;
  NvmlReturn (*by_pci_bus_id)(const char*, Device*) = nullptr;
  NvmlReturn (*utilization)(Device, NvmlUtilization*) = nullptr;
  NvmlReturn (*memory)(Device, NvmlMemory*) = nullptr;
  // Optional (older drivers, some boards): a reading without its call is left out.
  NvmlReturn (*uuid)(Device, char*, unsigned) = nullptr;
  NvmlReturn (*temperature)(Device, int, unsigned*) = nullptr;
  NvmlReturn (*power)(Device, unsigned*) = nullptr;
  NvmlReturn (*power_limit)(Device, unsigned*) = nullptr;
  NvmlReturn (*throttle)(Device, unsigned long long*) = nullptr;
  NvmlReturn (*ecc)(Device, int, int, unsigned long long*) = nullptr;
  NvmlReturn (*event_set_create)(EventSet*) = nullptr;
  NvmlReturn (*register_events)(Device, unsigned long long, EventSet) = nullptr;
  NvmlReturn (*event_set_wait)(EventSet, NvmlEventData*, unsigned) = nullptr;
  NvmlReturn (*event_set_free)(EventSet) = nullptr;

  // "nvmlDeviceGetMemoryInfo: GPU is lost"
  Status Error(const std::string& call, NvmlReturn r) const {
    const char* text = error_string != nullptr ? error_string(r) : nullptr;
    return Unavailable(call + ": " + (text != nullptr ? text : "NVML error " + std::to_string(r)));
  }
};

namespace {

template <typename Fn>
Status Resolve(void* handle, const std::string& library, const char* name, Fn& out) {
  // dlsym returns an object pointer; POSIX guarantees it converts to a function pointer.
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (out == nullptr) {
    return Unavailable("no NVML: " + library + " has no " + name +
                       " (a driver older than NVML's v2 API?)");
  }
  return Status::Ok();
}

}  // namespace

NvmlSession::NvmlSession(void* library, std::unique_ptr<Api> api)
    : library_(library), api_(std::move(api)) {}

NvmlSession::~NvmlSession() {
  (void)api_->shutdown();
  dlclose(library_);
}

Result<std::unique_ptr<NvmlSession>> NvmlSession::Open(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return Unavailable("no NVML: " + std::string(why != nullptr ? why : library + " not found"));
  }
  auto api = std::make_unique<Api>();
  Status resolved = Status::Ok();
  for (const Status& s : {Resolve(handle, library, "nvmlInit_v2", api->init),
                   Resolve(handle, library, "nvmlShutdown", api->shutdown),
                   Resolve(handle, library, "nvmlErrorString", api->error_string),
                   Resolve(handle, library, "nvmlSystemGetDriverVersion", api->driver_version),
                   Resolve(handle, library, "nvmlDeviceGetCount_v2", api->device_count),
                   Resolve(handle, library, "nvmlDeviceGetHandleByIndex_v2", api->by_index),
                   Resolve(handle, library, "nvmlDeviceGetHandleByPciBusId_v2", api->by_pci_bus_id),
                   Resolve(handle, library, "nvmlDeviceGetUtilizationRates", api->utilization),
                   Resolve(handle, library, "nvmlDeviceGetMemoryInfo", api->memory)}) {
    if (resolved.ok() && !s.ok()) resolved = s;
  }
  if (!resolved.ok()) {
    dlclose(handle);
    return resolved;
  }
  auto optional = [handle](const char* name, auto& out) {
    out = reinterpret_cast<std::remove_reference_t<decltype(out)>>(dlsym(handle, name));
  };
  optional("nvmlDeviceGetUUID", api->uuid);
  optional("nvmlDeviceGetTemperature", api->temperature);
  optional("nvmlDeviceGetPowerUsage", api->power);
  optional("nvmlDeviceGetEnforcedPowerLimit", api->power_limit);
  optional("nvmlDeviceGetCurrentClocksThrottleReasons", api->throttle);
  optional("nvmlDeviceGetTotalEccErrors", api->ecc);
  optional("nvmlEventSetCreate", api->event_set_create);
  optional("nvmlDeviceRegisterEvents", api->register_events);
  optional("nvmlEventSetWait_v2", api->event_set_wait);
  optional("nvmlEventSetFree", api->event_set_free);
  if (const NvmlReturn r = api->init(); r != kNvmlSuccess) {
    Status failed = api->Error("no NVML: nvmlInit_v2", r);
    dlclose(handle);
    return failed;
  }
  return std::unique_ptr<NvmlSession>(new NvmlSession(handle, std::move(api)));
}

Result<std::string> NvmlSession::DriverVersion() const {
  char version[kDriverVersionBufferSize] = {};
  if (const NvmlReturn r = api_->driver_version(version, sizeof(version)); r != kNvmlSuccess) {
    return api_->Error("nvmlSystemGetDriverVersion", r);
  }
  return std::string(version);
}

Result<unsigned> NvmlSession::DeviceCount() const {
  unsigned count = 0;
  if (const NvmlReturn r = api_->device_count(&count); r != kNvmlSuccess) {
    return api_->Error("nvmlDeviceGetCount_v2", r);
  }
  return count;
}

Result<NvmlSession::Device> NvmlSession::Find(const kernels::DeviceInfo& cuda) const {
  Device device = nullptr;
  if (cuda.pci_bus_id.empty()) {
    if (const NvmlReturn r = api_->by_index(static_cast<unsigned>(cuda.index), &device);
        r != kNvmlSuccess) {
      return api_->Error("nvmlDeviceGetHandleByIndex_v2(" + std::to_string(cuda.index) + ")", r);
    }
    return device;
  }
  if (const NvmlReturn r = api_->by_pci_bus_id(cuda.pci_bus_id.c_str(), &device);
      r != kNvmlSuccess) {
    return api_->Error("nvmlDeviceGetHandleByPciBusId_v2(" + cuda.pci_bus_id + ")", r);
  }
  return device;
}

Result<wire::GpuUsage> NvmlSession::Sample(Device device, uint32_t index) const {
  NvmlUtilization busy{};
  if (const NvmlReturn r = api_->utilization(device, &busy); r != kNvmlSuccess) {
    // e.g. "Not Supported" for a GPU in MIG mode: no sample, rather than a made-up 0%.
    return api_->Error("nvmlDeviceGetUtilizationRates (GPU " + std::to_string(index) + ")", r);
  }
  NvmlMemory memory{};
  if (const NvmlReturn r = api_->memory(device, &memory); r != kNvmlSuccess) {
    return api_->Error("nvmlDeviceGetMemoryInfo (GPU " + std::to_string(index) + ")", r);
  }
  wire::GpuUsage usage{index, busy.gpu, memory.used, memory.total};
  const Api& a = *api_;
  if (unsigned c = 0; a.temperature != nullptr && a.temperature(device, kTemperatureGpu, &c) == kNvmlSuccess) {
    usage.temperature_c = c;
    usage.readings |= wire::kGpuTemperature;
  }
  if (unsigned mw = 0; a.power != nullptr && a.power(device, &mw) == kNvmlSuccess) {
    usage.power_mw = mw;
    usage.readings |= wire::kGpuPower;
  }
  if (unsigned mw = 0; a.power_limit != nullptr && a.power_limit(device, &mw) == kNvmlSuccess) {
    usage.power_limit_mw = mw;
    usage.readings |= wire::kGpuPowerLimit;
  }
  if (unsigned long long bits = 0; a.throttle != nullptr && a.throttle(device, &bits) == kNvmlSuccess) {
    usage.throttle_reasons = bits;
    usage.readings |= wire::kGpuThrottle;
  }
  // "Not Supported" on boards without ECC (or with it turned off): no reading, not 0 errors.
  if (unsigned long long n = 0;
      a.ecc != nullptr && a.ecc(device, kMemoryErrorUncorrected, kVolatileEcc, &n) == kNvmlSuccess) {
    usage.ecc_uncorrected = n;
    usage.readings |= wire::kGpuEcc;
  }
  return usage;
}

std::string NvmlSession::Uuid(Device device) const {
  char uuid[kUuidBufferSize] = {};
  if (api_->uuid == nullptr || api_->uuid(device, uuid, sizeof(uuid)) != kNvmlSuccess) return "";
  return std::string(uuid);
}

Result<NvmlSession::EventSet> NvmlSession::CreateEventSet() const {
  if (api_->event_set_create == nullptr || api_->register_events == nullptr ||
      api_->event_set_wait == nullptr || api_->event_set_free == nullptr) {
    return Unavailable("this NVML has no event API (nvmlEventSetWait_v2)");
  }
  EventSet set = nullptr;
  if (const NvmlReturn r = api_->event_set_create(&set); r != kNvmlSuccess) {
    return api_->Error("nvmlEventSetCreate", r);
  }
  return set;
}

Status NvmlSession::WatchXids(Device device, EventSet set) const {
  if (const NvmlReturn r = api_->register_events(device, kEventXidCritical, set); r != kNvmlSuccess) {
    return api_->Error("nvmlDeviceRegisterEvents", r);
  }
  return Status::Ok();
}

std::optional<std::pair<NvmlSession::Device, uint32_t>> NvmlSession::NextXid(EventSet set) const {
  for (;;) {
    NvmlEventData data{};
    // Timeout 0: what is pending now, never a wait on the worker's event loop.
    const NvmlReturn r = api_->event_set_wait(set, &data, 0);
    if (r != kNvmlSuccess) return std::nullopt;  // kNvmlTimeout: none pending (or an error)
    if ((data.event_type & kEventXidCritical) == 0) continue;
    return std::make_pair(data.device, static_cast<uint32_t>(data.event_data));
  }
}

void NvmlSession::FreeEventSet(EventSet set) const { (void)api_->event_set_free(set); }

GpuMonitor::GpuMonitor(const std::vector<kernels::DeviceInfo>& devices,
                       const std::string& library) {
  if (devices.empty()) {
    unavailable_ = Unavailable("no GPUs");
    return;
  }
  Result<std::unique_ptr<NvmlSession>> nvml = NvmlSession::Open(library);
  if (!nvml.ok()) {
    unavailable_ = nvml.status();
    return;
  }
  nvml_ = std::move(*nvml);
  for (const kernels::DeviceInfo& d : devices) {
    Result<NvmlSession::Device> device = nvml_->Find(d);
    if (!device.ok()) {
      // One unmapped GPU would make "every GPU idle" unprovable: no samples at all.
      unavailable_ = device.status().WithContext("NVML has no device for CUDA GPU " +
                                                 std::to_string(d.index));
      devices_.clear();
      return;
    }
    Mapped mapped;
    mapped.index = static_cast<uint32_t>(d.index);
    mapped.device = *device;
    mapped.uuid = nvml_->Uuid(*device);
    devices_.push_back(std::move(mapped));
  }
  // XIDs are watched where the driver lets us; a GPU it does not (an old driver, a vGPU) just
  // reports no XID reading, and the others still do.
  Result<NvmlSession::EventSet> set = nvml_->CreateEventSet();
  if (!set.ok()) {
    Logger("worker")->warn("GPU XID errors are not watched: {}", set.status().message());
    return;
  }
  xid_events_ = *set;
  for (Mapped& m : devices_) {
    if (Status watched = nvml_->WatchXids(m.device, xid_events_); watched.ok()) {
      m.xids_watched = true;
    } else {
      Logger("worker")->warn("GPU {}: XID errors are not watched: {}", m.index, watched.message());
    }
  }
}

GpuMonitor::~GpuMonitor() {
  if (xid_events_ != nullptr) nvml_->FreeEventSet(xid_events_);
}

void GpuMonitor::DrainXids() {
  if (xid_events_ == nullptr) return;
  while (std::optional<std::pair<NvmlSession::Device, uint32_t>> xid = nvml_->NextXid(xid_events_)) {
    for (Mapped& m : devices_) {
      if (m.device != xid->first) continue;
      m.last_xid = xid->second;
      if (pool::XidMeansFaultyGpu(xid->second)) ++m.xid_errors;
      Logger("worker")->error("GPU {}: {}", m.index, pool::DescribeXid(xid->second));
    }
  }
}

Result<std::vector<wire::GpuUsage>> GpuMonitor::Sample() {
  if (!unavailable_.ok()) return unavailable_;
  DrainXids();
  std::vector<wire::GpuUsage> samples;
  samples.reserve(devices_.size());
  for (const Mapped& m : devices_) {
    COUPLER_ASSIGN_OR_RETURN(wire::GpuUsage usage, nvml_->Sample(m.device, m.index));
    if (m.xids_watched) {
      usage.readings |= wire::kGpuXid;
      usage.xid_errors = m.xid_errors;
      usage.last_xid = m.last_xid;
    }
    samples.push_back(usage);
  }
  return samples;
}

std::string GpuMonitor::Uuid(uint32_t index) const {
  for (const Mapped& m : devices_) {
    if (m.index == index) return m.uuid;
  }
  return "";
}

}  // namespace coupler::worker
