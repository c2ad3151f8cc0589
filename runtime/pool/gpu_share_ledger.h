// Fractional GPUs: tasks that ask for `gpu_memory` (a share of one device, not a whole GPU) are
// packed onto a worker's devices within each device's memory. Best fit: a share goes to the
// device with the least room that still holds it, so a later large share still finds a device
// with room. Pure bookkeeping, kept twice with the same rule: by the worker (which device a
// task runs on; its task pool holds the lock) and by the coordinator (how many shares it sends
// a worker, so tasks wait in the coordinator's queue, where another worker can take them).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace coupler::pool {

// What shares may take of a device with `free_bytes` free when the worker started: a margin is
// left for the CUDA contexts and cuBLAS workspaces of the worker's own threads.
inline uint64_t ShareCapacity(uint64_t free_bytes) { return free_bytes / 20 * 19; }

class GpuShareLedger {
 public:
  struct Device {
    int index = 0;          // CUDA ordinal
    uint64_t capacity = 0;  // bytes that shares may take on it
  };

  explicit GpuShareLedger(std::vector<Device> devices) : devices_(std::move(devices)) {
    reserved_.assign(devices_.size(), 0);
  }

  // The device that now holds a share of `bytes`, or nullopt when none has room at present.
  std::optional<int> Reserve(uint64_t bytes);
  // Gives a share back; `device` and `bytes` as Reserve returned and was asked.
  void Release(int device, uint64_t bytes);

  // Devices fenced off (an XID, an ECC error, an operator: coordinator/gpu_fences.h) have no
  // room until they leave this list; the shares they hold run on.
  void SetFenced(std::vector<int> devices) { fenced_ = std::move(devices); }

  // Whether Reserve(bytes) would succeed now.
  bool FitsNow(uint64_t bytes) const;
  // Whether a share of `bytes` could ever fit (some device is that large): a task that can
  // never fit fails at once instead of waiting forever.
  bool CanEverFit(uint64_t bytes) const;
  uint64_t largest_capacity() const;
  uint64_t reserved(int device) const;
  bool empty() const { return devices_.empty(); }

 private:
  uint64_t Room(size_t i) const;  // what devices_[i] may still take

  std::vector<Device> devices_;
  std::vector<uint64_t> reserved_;  // per devices_ entry
  std::vector<int> fenced_;
};

}  // namespace coupler::pool
