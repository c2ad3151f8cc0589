// Live utilization and memory of a worker's GPUs through NVML, which is loaded at run time
// (dlopen of libnvidia-ml.so.1, shipped with the driver): the build needs no NVML, and a
// machine without it says why instead of reporting idle GPUs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"

struct nvmlDevice_st;  // NVML's opaque device; its handles are pointers to it

namespace coupler::worker {

// The soname the driver installs; the unversioned libnvidia-ml.so is only in -dev packages.
inline constexpr char kNvmlLibrary[] = "libnvidia-ml.so.1";

// One NVML session: the library loaded and initialised (nvmlInit_v2); shut down and unloaded
// when it goes. Every failure is a Status naming the NVML call and NVML's own message.
class NvmlSession {
 public:
  using Device = nvmlDevice_st*;

  // Unavailable "no NVML: <dlopen's message>" when the library cannot be loaded, or
  // "no NVML: nvmlInit_v2: <NVML's message>" when it loads but cannot start (no driver).
  static Result<std::unique_ptr<NvmlSession>> Open(const std::string& library = kNvmlLibrary);
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  // e.g. "550.54.15"
  Result<std::string> DriverVersion() const;
  // Every GPU NVML sees, whatever CUDA_VISIBLE_DEVICES hides from CUDA.
  Result<unsigned> DeviceCount() const;
  // The NVML device that is this CUDA device: by PCI bus id, as NVML's indices follow PCI
  // order and ignore CUDA_VISIBLE_DEVICES while CUDA's ordinals follow both. Only a device
  // without a bus id (none such on Linux drivers so far) is taken by index.
  Result<Device> Find(const kernels::DeviceInfo& cuda) const;
  // Its utilization over NVML's last sample period (1/6 s to 1 s, by product) and memory.
  // `index` is what the sample is reported as: the CUDA ordinal.
  Result<wire::GpuUsage> Sample(Device device, uint32_t index) const;

  struct Api;  // the resolved entry points (gpu_monitor.cc)

 private:
  NvmlSession(void* library, std::unique_ptr<Api> api);

  void* library_;  // owned dlopen handle
  std::unique_ptr<Api> api_;
};

// The worker's GPUs as its heartbeat reports them. Made once: NVML is opened and each CUDA
// device mapped to its NVML device at start, so a Sample is two NVML calls per GPU
// (microseconds: cheap enough for the event loop, no thread needed).
class GpuMonitor {
 public:
  // `devices`: the CUDA devices the worker offers. None: NVML is never loaded.
  explicit GpuMonitor(const std::vector<kernels::DeviceInfo>& devices,
                      const std::string& library = kNvmlLibrary);

  // One sample per GPU, in the order given; else a Status whose message is what the heartbeat
  // says instead ("no GPUs", "no NVML: ..."), never samples that read as idle GPUs.
  Result<std::vector<wire::GpuUsage>> Sample() const;

 private:
  struct Mapped {
    uint32_t index = 0;  // CUDA ordinal
    NvmlSession::Device device = nullptr;
  };

  Status unavailable_;  // why there are no samples at all (set once, at construction)
  std::unique_ptr<NvmlSession> nvml_;
  std::vector<Mapped> devices_;
};

}  // namespace coupler::worker
