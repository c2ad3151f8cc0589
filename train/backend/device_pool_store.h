// A MemoryBudget's store over a kernels::DevicePool, so a budget's buffers live in GPU memory and
// a full pool is the same ResourceExhausted (and the same micro-batch back-off) as a full budget.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

#include "kernels/device_pool.h"
#include "train/memory/buffer_store.h"

namespace coupler::train {

// Not thread-safe: one per rank, as its budget.
class DevicePoolStore final : public memory::BufferStore {
 public:
  // pool is borrowed and must outlive the store and every block it handed out.
  explicit DevicePoolStore(kernels::DevicePool& pool);

  Result<void*> Allocate(size_t bytes, std::string_view what) override;
  void Free(void* data, size_t bytes) noexcept override;
  std::string_view where() const override { return where_; }

 private:
  kernels::DevicePool& pool_;
  std::string where_;
  std::unordered_map<void*, kernels::DeviceAllocation> live_;
};

}  // namespace coupler::train
