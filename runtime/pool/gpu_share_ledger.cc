#include "runtime/pool/gpu_share_ledger.h"

#include <algorithm>

namespace coupler::pool {

uint64_t GpuShareLedger::Room(size_t i) const {
  if (std::find(fenced_.begin(), fenced_.end(), devices_[i].index) != fenced_.end()) return 0;
  return devices_[i].capacity - std::min(reserved_[i], devices_[i].capacity);
}

std::optional<int> GpuShareLedger::Reserve(uint64_t bytes) {
  std::optional<size_t> best;
  for (size_t i = 0; i < devices_.size(); ++i) {
    const uint64_t room = Room(i);
    if (room < bytes || (bytes == 0 && room == 0)) continue;
    const uint64_t best_room = best ? Room(*best) : UINT64_MAX;
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
    if (Room(i) >= bytes && Room(i) > 0) return true;
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
