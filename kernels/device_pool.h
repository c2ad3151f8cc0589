// A per-device memory arena: one cudaMalloc at creation, sub-allocated first-fit with 256-byte
// alignment, so buffers are reused across training steps without cudaMalloc/cudaFree (which
// synchronize the device) and running out is a ResourceExhausted the caller can back off from.
// CUDA-free: defined in kernels/cuda/device_pool.cc, or kernels/nocuda/ (Unavailable).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string_view>

#include "kernels/arena_allocator.h"
#include "runtime/status.h"

namespace coupler::kernels {

class DevicePool;

// Device memory borrowed from a DevicePool; move-only, returned to the pool when destroyed.
// The pool must outlive it. A zero-byte allocation is empty (data() == nullptr).
class DeviceAllocation {
 public:
  DeviceAllocation() = default;
  DeviceAllocation(DeviceAllocation&& other) noexcept;
  DeviceAllocation& operator=(DeviceAllocation&& other) noexcept;
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  ~DeviceAllocation() { Release(); }

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }  // as requested, not rounded

  // Blocking copies between host memory and the first `bytes` of this allocation (at most
  // bytes()); InvalidArgument past the end, CUDA failures as their Status.
  Status CopyFromHost(const void* src, size_t bytes);
  Status CopyToHost(void* dst, size_t bytes) const;

 private:
  friend class DevicePool;
  void Release() noexcept;

  DevicePool* pool_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  size_t offset_ = 0;
};

// Thread-safe. Allocations live on `device`; the pool never changes the calling thread's
// current device except during Create and the destructor (restored afterwards).
class DevicePool {
 public:
  static constexpr size_t kAlignment = 256;
  // Of the free memory, the share Create(device, 0) leaves to cuBLAS, NCCL and the context.
  static constexpr double kReserveFraction = 0.05;

  // Reserves the arena on `device` now. limit_bytes == 0 takes the device's free memory less
  // kReserveFraction. ResourceExhausted when the device cannot back the arena; Unavailable
  // without a device or in a CPU-only build.
  static Result<std::unique_ptr<DevicePool>> Create(int device, size_t limit_bytes);

  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;
  ~DevicePool();  // frees the arena; every DeviceAllocation must be gone by then

  // Not zero-filled. ResourceExhausted naming `what`, the request and the bytes in use when no
  // free block is large enough (fragmentation included); nothing is allocated then.
  Result<DeviceAllocation> Allocate(size_t bytes, std::string_view what);

  int device() const { return device_; }
  size_t limit() const { return arena_.capacity(); }
  size_t in_use() const;  // bytes of live allocations, each rounded up to kAlignment
  size_t peak() const;

 private:
  friend class DeviceAllocation;
  DevicePool(int device, void* base, size_t capacity);
  void Return(size_t offset) noexcept;

  const int device_;
  void* const base_;
  mutable std::mutex mu_;
  ArenaAllocator arena_;  // guarded by mu_
  size_t peak_ = 0;       // guarded by mu_
};

}  // namespace coupler::kernels
