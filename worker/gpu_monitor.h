// Live utilization and memory of a worker's GPUs through NVML, which is loaded at run time
// (dlopen of libnvidia-ml.so.1, shipped with the driver): the build needs no NVML, and a
// machine without it says why instead of reporting idle GPUs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/device.h"
#include "runtime/status.h"
#include "runtime/wire/worker_messages.h"

struct nvmlDevice_st;    // NVML's opaque device; its handles are pointers to it
struct nvmlEventSet_st;  // NVML's opaque event set

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
  // Its utilization over NVML's last sample period (1/6 s to 1 s, by product) and memory,
  // and the health readings it gives (temperature, power and its limit, throttle reasons,
  // volatile uncorrectable ECC errors; each marked in `readings` only when read: a board
  // without ECC, or a driver without the call, leaves it out). `index` is what the sample is
  // reported as: the CUDA ordinal.
  Result<wire::GpuUsage> Sample(Device device, uint32_t index) const;
  // The board's id, "GPU-" and 32 hex digits; "" when NVML cannot say.
  std::string Uuid(Device device) const;

  // Critical XID events (NVML's event sets): a set made once, each GPU registered on it, then
  // drained without waiting at every sample. Unavailable when the driver has no event API.
  using EventSet = nvmlEventSet_st*;
  Result<EventSet> CreateEventSet() const;
  Status WatchXids(Device device, EventSet set) const;
  // The next pending XID event, without waiting: its device and XID; nullopt when none.
  std::optional<std::pair<Device, uint32_t>> NextXid(EventSet set) const;
  void FreeEventSet(EventSet set) const;

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

  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // One sample per GPU, in the order given; else a Status whose message is what the heartbeat
  // says instead ("no GPUs", "no NVML: ..."), never samples that read as idle GPUs. Counts the
  // XID events that arrived since the last one (so not const).
  Result<std::vector<wire::GpuUsage>> Sample();
  // The board id of CUDA GPU `index` ("" without NVML), as registration reports it.
  std::string Uuid(uint32_t index) const;

 private:
  struct Mapped {
    uint32_t index = 0;  // CUDA ordinal
    NvmlSession::Device device = nullptr;
    std::string uuid;
    bool xids_watched = false;
    uint64_t xid_errors = 0;  // those pointing at the GPU (runtime/pool/gpu_health.h)
    uint32_t last_xid = 0;
  };
  void DrainXids();

  Status unavailable_;  // why there are no samples at all (set once, at construction)
  std::unique_ptr<NvmlSession> nvml_;
  std::vector<Mapped> devices_;
  NvmlSession::EventSet xid_events_ = nullptr;  // owned; null when XIDs cannot be watched
};

}  // namespace coupler::worker
