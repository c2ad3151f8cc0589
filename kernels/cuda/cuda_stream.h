// An owned CUDA stream: move-only, destroyed by the destructor. Non-blocking, so a worker's
// concurrent tasks on one GPU do not serialize behind the legacy default stream.
#pragma once

#include <utility>

#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_check.h"
#include "runtime/status.h"

namespace coupler::kernels {

class CudaStream {
 public:
  static Result<CudaStream> Create() {
    cudaStream_t stream = nullptr;
    COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return CudaStream(stream);
  }

  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept {
    if (this != &other) {
      Release();
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() { Release(); }

  cudaStream_t get() const { return stream_; }

 private:
  explicit CudaStream(cudaStream_t stream) : stream_(stream) {}

  // Pending work still completes after cudaStreamDestroy; errors are not reportable here.
  void Release() noexcept {
    if (stream_ != nullptr && cudaStreamDestroy(stream_) != cudaSuccess) (void)cudaGetLastError();
    stream_ = nullptr;
  }

  cudaStream_t stream_ = nullptr;
};

}  // namespace coupler::kernels
