// A MemoryBudget's store over a kernels::DevicePool, so a budget's buffers live in GPU memory and
// a full pool is the same ResourceExhausted (and the same micro-batch back-off) as a full budget.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>

#include "kernels/device_pool.h"
#include "kernels/train_kernel_table.h"
#include "train/memory/buffer_store.h"

namespace coupler::train {

// Not thread-safe: one per rank, as its budget.
class DevicePoolStore final : public memory::BufferStore {
 public:
  // pool is borrowed and must outlive the store and every block it handed out; blocks are
  // cleared with the kernels' zero fill.
  DevicePoolStore(kernels::DevicePool& pool, const kernels::TrainKernelTable& kernels);

  Result<void*> Allocate(size_t bytes, std::string_view what) override;
  void Free(void* data, size_t bytes) noexcept override;
  std::string_view where() const override { return where_; }

 private:
  kernels::DevicePool& pool_;
  const kernels::TrainKernelTable& kernels_;
  std::string where_;
  std::unordered_map<void*, kernels::DeviceAllocation> live_;
};

}  // namespace coupler::train
