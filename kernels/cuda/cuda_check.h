// CUDA runtime errors as Status: the project's one mapping, for the code that includes CUDA
// headers (kernels/cuda/ and the NCCL communicator in train/comm/nccl/). One macro checks every
// call, so a failure names the call, where it was made and what CUDA said, and no CUDA error
// code leaves those files.
#pragma once

#include <cuda_runtime_api.h>

#include "runtime/status.h"

namespace coupler::kernels {

// True for the errors that mean "this machine has no usable CUDA device": no device, no or an
// old driver, or only the toolkit's stub libcuda. These are normal on CPU-only machines.
bool IsNoCudaDeviceError(cudaError_t error);

// The Status for a failed CUDA call, with a code callers can act on: out of memory is
// ResourceExhausted (back off), no usable device or driver is Unavailable, a device index or
// argument CUDA refuses is InvalidArgument, the rest Internal.
// Also clears CUDA's last-error slot, so a later cudaGetLastError() after a kernel launch
// reports that launch and not this older failure.
Status CudaErrorStatus(cudaError_t error, const char* call, const char* file, int line);

}  // namespace coupler::kernels

#define COUPLER_CUDA_RETURN_IF_ERROR(call)                                              \
  do {                                                                                 \
    const cudaError_t coupler_cuda_error_ = (call);                                    \
    if (coupler_cuda_error_ != cudaSuccess) {                                          \
      return ::coupler::kernels::CudaErrorStatus(coupler_cuda_error_, #call, __FILE__, \
                                                 __LINE__);                            \
    }                                                                                  \
  } while (0)
