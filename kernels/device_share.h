// A task's share of a GPU: when a worker packs several tasks that asked for `gpu_memory` onto
// one device, each runs under a ScopedDeviceShare, and every allocation the CUDA twins make on
// that thread is charged to it. A task that needs more than it asked for fails alone with
// ResourceExhausted, instead of taking memory its neighbours on the same device were promised.
// CUDA-free, so the accounting is tested on any machine.
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/status.h"

namespace coupler::kernels {

// Sets the calling thread's share for its lifetime (scopes do not nest: an inner one replaces
// the outer until it ends). limit_bytes == 0 means no share: allocations are not limited.
class ScopedDeviceShare {
 public:
  explicit ScopedDeviceShare(uint64_t limit_bytes);
  ~ScopedDeviceShare();
  ScopedDeviceShare(const ScopedDeviceShare&) = delete;
  ScopedDeviceShare& operator=(const ScopedDeviceShare&) = delete;

 private:
  uint64_t saved_limit_;
  uint64_t saved_used_;
};

// Charges `bytes` to the calling thread's share: OK without a share or within it, else
// ResourceExhausted naming the request, the bytes held and the share (nothing charged then).
Status ChargeDeviceShare(size_t bytes);
// Gives back bytes an earlier successful charge took.
void ReturnDeviceShare(size_t bytes) noexcept;
// Bytes charged to the current share (0 without one).
uint64_t DeviceShareUsed();

}  // namespace coupler::kernels
