// Device memory for the benchmarks, declared without CUDA headers: the CUDA benchmarks time
// kernels on columns already resident on the device. Defined in bench/device_buffer_cuda.cc
// (built into bench_kernels with CUDA only); bench/device_buffer_nocuda.cc answers Unavailable.
#pragma once

#include <cstddef>

#include "runtime/status.h"

namespace coupler::bench {

// Owned device memory on the calling thread's current device: move-only, freed on destruction.
class BenchDeviceBuffer {
 public:
  // `bytes` of uninitialized device memory; ResourceExhausted when it does not fit.
  static Result<BenchDeviceBuffer> Allocate(size_t bytes);
  // A device copy of host[0..bytes).
  static Result<BenchDeviceBuffer> CopyOf(const void* host, size_t bytes);

  BenchDeviceBuffer() = default;
  BenchDeviceBuffer(BenchDeviceBuffer&& other) noexcept;
  BenchDeviceBuffer& operator=(BenchDeviceBuffer&& other) noexcept;
  BenchDeviceBuffer(const BenchDeviceBuffer&) = delete;
  BenchDeviceBuffer& operator=(const BenchDeviceBuffer&) = delete;
  ~BenchDeviceBuffer();

  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  BenchDeviceBuffer(void* ptr, size_t bytes) : ptr_(ptr), bytes_(bytes) {}
  void Release() noexcept;

  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// dst[0..bytes) = src[0..bytes), both device pointers, finished before returning: the ceiling a
// memory-bound kernel over the same bytes can reach.
Status CopyDeviceToDevice(void* dst, const void* src, size_t bytes);

}  // namespace coupler::bench
