// Fractional GPUs on one worker: tasks that ask for `gpu_memory` (a share of one device, not a
// whole GPU) are packed onto the worker's devices within each device's memory. Best fit: a
// share goes to the device with the least room that still holds it, so a later large share
// still finds a device with room. Pure bookkeeping; the task pool holds the lock.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace coupler::worker {

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

  // Whether a share of `bytes` could ever fit (some device is that large): a task that can
  // never fit fails at once instead of waiting forever.
  bool CanEverFit(uint64_t bytes) const;
  uint64_t largest_capacity() const;
  uint64_t reserved(int device) const;
  bool empty() const { return devices_.empty(); }

 private:
  std::vector<Device> devices_;
  std::vector<uint64_t> reserved_;  // per devices_ entry
};

}  // namespace coupler::worker
