// A budgeted device allocator: every training buffer is charged to a budget that fails with
// ResourceExhausted past its limit, as a GPU's allocator would. The CPU backend enforces
// `--device-memory-limit` through it, which makes OOM handling testable without a GPU; on a GPU
// the same budget is backed by device memory (a BufferStore), so the accounting is one code.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "train/memory/buffer_store.h"
#include "runtime/status.h"

namespace coupler::memory {

// What a buffer holds, so reports can say where the bytes went.
enum class MemoryKind : uint8_t {
  kMaster,       // fp32 master weights
  kGradient,     // fp32 gradient accumulators
  kOptimizer,    // momentum / Adam moments
  kComputeCopy,  // weights rounded to the compute precision (fp16/bf16 runs only)
  kActivation,   // activations kept for the backward pass and their gradients
  kWorkspace,    // transient scratch (GEMM widening tiles, staging)
  kData,         // input batches staged on the device
};
inline constexpr size_t kMemoryKindCount = 7;
std::string_view MemoryKindName(MemoryKind kind);

class MemoryBudget;

// A 64-byte aligned allocation, in the budget's store, charged to a MemoryBudget; move-only,
// returns its bytes when destroyed. The budget must outlive it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }
  MemoryKind kind() const { return kind_; }

 private:
  friend class MemoryBudget;
  void Release() noexcept;

  MemoryBudget* budget_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  MemoryKind kind_ = MemoryKind::kWorkspace;
};

// Not thread-safe: one budget per rank, used by that rank's training thread.
class MemoryBudget {
 public:
  // limit_bytes == 0 means unlimited. `store` backs the buffers (borrowed, must outlive the
  // budget and its buffers); null means host memory.
  explicit MemoryBudget(size_t limit_bytes = 0, BufferStore* store = nullptr);
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // Zero-filled. ResourceExhausted past the limit, naming `what`, the request and the bytes in
  // use; nothing is charged then. Also ResourceExhausted when the store cannot back a request
  // the budget allows; its other errors pass through. A zero-byte request gives an empty buffer
  // (data() == nullptr), not an error.
  Result<DeviceBuffer> Allocate(size_t bytes, MemoryKind kind, std::string_view what);

  size_t limit() const { return limit_; }
  BufferStore& store() const { return *store_; }
  size_t in_use() const { return in_use_; }
  size_t peak() const { return peak_; }
  size_t in_use(MemoryKind kind) const;
  size_t peak(MemoryKind kind) const;
  // Peak of activations + compute copies + workspace together: what mixed precision shrinks.
  size_t peak_compute_working_set() const { return peak_working_; }
  void ResetPeaks();

 private:
  friend class DeviceBuffer;
  void Return(size_t bytes, MemoryKind kind) noexcept;
  void UpdatePeaks();

  size_t limit_;
  BufferStore* store_;
  size_t in_use_ = 0;
  size_t peak_ = 0;
  size_t peak_working_ = 0;
  std::array<size_t, kMemoryKindCount> in_use_by_kind_{};
  std::array<size_t, kMemoryKindCount> peak_by_kind_{};
};

}  // namespace coupler::memory
