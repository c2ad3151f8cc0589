#include "worker/gpu_monitor.h"

#include <dlfcn.h>

#include <utility>

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
  return wire::GpuUsage{index, busy.gpu, memory.used, memory.total};
}

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
    devices_.push_back({static_cast<uint32_t>(d.index), *device});
  }
}

Result<std::vector<wire::GpuUsage>> GpuMonitor::Sample() const {
  if (!unavailable_.ok()) return unavailable_;
  std::vector<wire::GpuUsage> samples;
  samples.reserve(devices_.size());
  for (const Mapped& m : devices_) {
    COUPLER_ASSIGN_OR_RETURN(wire::GpuUsage usage, nvml_->Sample(m.device, m.index));
    samples.push_back(usage);
  }
  return samples;
}

}  // namespace coupler::worker
