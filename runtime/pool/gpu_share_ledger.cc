#include "runtime/pool/gpu_share_ledger.h"

#include <algorithm>

namespace coupler::pool {

std::optional<int> GpuShareLedger::Reserve(uint64_t bytes) {
  std::optional<size_t> best;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const uint64_t room = devices_[i].capacity - std::min(reserved_[i], devices_[i].capacity);
    if (room < bytes) continue;
    const uint64_t best_room =
        best ? devices_[*best].capacity - reserved_[*best] : UINT64_MAX;
    if (room < best_room) best = i;
  }
  if (!best) return std::nullopt;
  reserved_[*best] += bytes;
  return devices_[*best].index;
}

void GpuShareLedger::Release(int device, uint64_t bytes) {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].index == device) {
      reserved_[i] -= std::min(bytes, reserved_[i]);
      return;
    }
  }
}

bool GpuShareLedger::FitsNow(uint64_t bytes) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].capacity - std::min(reserved_[i], devices_[i].capacity) >= bytes) return true;
  }
  return false;
}

bool GpuShareLedger::CanEverFit(uint64_t bytes) const { return bytes <= largest_capacity(); }

uint64_t GpuShareLedger::largest_capacity() const {
  uint64_t largest = 0;
  for (const Device& d : devices_) largest = std::max(largest, d.capacity);
  return largest;
}

uint64_t GpuShareLedger::reserved(int device) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i].index == device) return reserved_[i];
  }
  return 0;
}

}  // namespace coupler::pool
