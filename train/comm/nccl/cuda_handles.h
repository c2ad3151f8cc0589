// Move-only owners of the CUDA objects the NCCL backend creates: a stream and a device buffer.
// Internal (includes cuda_runtime_api.h). Errors on release are ignored: there is no one left
// to tell, and the device may already be lost.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

namespace coupler::comm::internal {

class CudaStream {
 public:
  CudaStream() = default;
  explicit CudaStream(cudaStream_t stream) : stream_(stream) {}
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept {
    if (this != &other) {
      Reset();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() noexcept { Reset(); }

  cudaStream_t get() const { return stream_; }
  void Reset() noexcept {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }

 private:
  cudaStream_t stream_ = nullptr;
};

class CudaDeviceBuffer {
 public:
  CudaDeviceBuffer() = default;
  explicit CudaDeviceBuffer(void* data) : data_(data) {}
  CudaDeviceBuffer(CudaDeviceBuffer&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
  CudaDeviceBuffer& operator=(CudaDeviceBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
  }
  CudaDeviceBuffer(const CudaDeviceBuffer&) = delete;
  CudaDeviceBuffer& operator=(const CudaDeviceBuffer&) = delete;
  ~CudaDeviceBuffer() noexcept { Reset(); }

  void* get() const { return data_; }
  void Reset() noexcept {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
  }

 private:
  void* data_ = nullptr;
};

}  // namespace coupler::comm::internal
