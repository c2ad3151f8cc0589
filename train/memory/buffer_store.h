// Where a MemoryBudget's bytes come from: host memory by default, a GPU's memory when the
// trainer runs on one. The budget keeps the accounting (kinds, peaks, the limit); a store only
// backs and frees blocks, so the same OOM handling works on either.
#pragma once

#include <cstddef>
#include <string_view>

#include "runtime/status.h"

namespace coupler::memory {

class BufferStore {
 public:
  virtual ~BufferStore() = default;

  // A zero-filled block of `bytes` (> 0), aligned to at least 64 bytes. ResourceExhausted when
  // the memory behind the store is full; the budget then reports it as out of device memory.
  virtual Result<void*> Allocate(size_t bytes, std::string_view what) = 0;
  // Gives back a block from Allocate, with its size.
  virtual void Free(void* data, size_t bytes) noexcept = 0;
  // Where the blocks live, for error messages: "on the host", "on cuda:0".
  virtual std::string_view where() const = 0;
};

// Host memory from the aligned global operator new; the default store of every budget.
class HostBufferStore final : public BufferStore {
 public:
  Result<void*> Allocate(size_t bytes, std::string_view what) override;
  void Free(void* data, size_t bytes) noexcept override;
  std::string_view where() const override { return "on the host"; }

  // One process-wide instance: it holds no state.
  static HostBufferStore& Instance();
};

}  // namespace coupler::memory
