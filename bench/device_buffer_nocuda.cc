// Benchmark device memory in a CPU-only build: nothing to allocate; the benchmarks skip first.
#include "bench/device_buffer.h"
#include "kernels/nocuda/not_built.h"

namespace coupler::bench {

Result<BenchDeviceBuffer> BenchDeviceBuffer::Allocate(size_t) {
  return kernels::NotBuilt("device buffer");
}

Result<BenchDeviceBuffer> BenchDeviceBuffer::CopyOf(const void*, size_t) {
  return kernels::NotBuilt("device buffer");
}

BenchDeviceBuffer::BenchDeviceBuffer(BenchDeviceBuffer&& other) noexcept
    : ptr_(other.ptr_), bytes_(other.bytes_) {
  other.ptr_ = nullptr;
  other.bytes_ = 0;
}

BenchDeviceBuffer& BenchDeviceBuffer::operator=(BenchDeviceBuffer&& other) noexcept {
  ptr_ = other.ptr_;
  bytes_ = other.bytes_;
  other.ptr_ = nullptr;
  other.bytes_ = 0;
  return *this;
}

// Nothing is ever allocated here.
BenchDeviceBuffer::~BenchDeviceBuffer() = default;
void BenchDeviceBuffer::Release() noexcept {}

Status CopyDeviceToDevice(void*, const void*, size_t) { return kernels::NotBuilt("device copy"); }

}  // namespace coupler::bench
