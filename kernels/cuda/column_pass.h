// Drives an element-wise kernel over a host column: chunk by chunk, copy in, launch, check the
// launch, copy out, synchronize. Shared by the CUDA twins so each .cu holds just its kernel.
#pragma once

#include <algorithm>
#include <cstddef>

#include <cuda_runtime_api.h>

#include "kernels/cuda/batch_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_stream.h"
#include "kernels/cuda/device_buffer.h"
#include "runtime/status.h"

namespace coupler::kernels {

inline constexpr int kThreadsPerBlock = 256;

// Grid-stride kernels need no more blocks than fill the device: 8 blocks of 256 threads take
// all 2048 thread slots of an sm_80/sm_90 SM, and more would only queue.
inline Result<int> MaxResidentBlocks() {
  int device = 0;
  COUPLER_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  int sms = 0;
  COUPLER_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return std::max(sms, 1) * 8;
}

// `launch(d_in, d_out, count, blocks, threads, stream)` enqueues the kernel for one chunk.
template <typename In, typename Out, typename Launch>
Status RunColumnPass(const In* in, Out* out, size_t n, const Launch& launch) {
  const size_t chunk = std::min(n, kCudaChunkElements);
  COUPLER_ASSIGN_OR_RETURN(const int max_blocks, MaxResidentBlocks());
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_in, DeviceBuffer::Allocate(chunk * sizeof(In)));
  COUPLER_ASSIGN_OR_RETURN(DeviceBuffer d_out, DeviceBuffer::Allocate(chunk * sizeof(Out)));
  COUPLER_ASSIGN_OR_RETURN(CudaStream stream, CudaStream::Create());
  for (size_t start = 0; start < n; start += chunk) {
    const size_t count = std::min(chunk, n - start);
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_in.as<In>(), in + start, count * sizeof(In),
                                                 cudaMemcpyHostToDevice, stream.get()));
    const size_t wanted = (count + kThreadsPerBlock - 1) / kThreadsPerBlock;
    const int blocks = static_cast<int>(std::min<size_t>(wanted, max_blocks));
    launch(d_in.as<const In>(), d_out.as<Out>(), count, blocks, kThreadsPerBlock, stream.get());
    COUPLER_CUDA_RETURN_IF_ERROR(cudaGetLastError());  // bad launch configuration or image
    COUPLER_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out + start, d_out.as<Out>(),
                                                 count * sizeof(Out), cudaMemcpyDeviceToHost,
                                                 stream.get()));
    // Faults inside the kernel surface here, before any result is trusted.
    COUPLER_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream.get()));
  }
  return Status::Ok();
}

}  // namespace coupler::kernels
