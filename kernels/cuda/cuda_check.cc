#include "kernels/cuda/cuda_check.h"

#include <cstring>
#include <string>

namespace coupler::kernels {
namespace {

// Build systems pass absolute paths in __FILE__; the part from "kernels/" or "train/" on is
// what a reader of the message needs.
const char* ShortPath(const char* file) {
  for (const char* top : {"kernels/", "train/"}) {
    const char* p = std::strstr(file, top);
    if (p != nullptr) return p;
  }
  return file;
}

}  // namespace

bool IsNoCudaDeviceError(cudaError_t error) {
  return error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver ||
         error == cudaErrorStubLibrary;
}

Status CudaErrorStatus(cudaError_t error, const char* call, const char* file, int line) {
  (void)cudaGetLastError();
  std::string message = std::string(call) + " failed at " + ShortPath(file) + ":" +
                        std::to_string(line) + ": " + cudaGetErrorString(error) + " (" +
                        cudaGetErrorName(error) + ")";
  if (error == cudaErrorMemoryAllocation) return ResourceExhausted(std::move(message));
  if (IsNoCudaDeviceError(error) || error == cudaErrorDevicesUnavailable ||
      error == cudaErrorSystemDriverMismatch || error == cudaErrorCompatNotSupportedOnDevice ||
      error == cudaErrorNoKernelImageForDevice || error == cudaErrorUnsupportedPtxVersion) {
    return Unavailable(std::move(message));
  }
  if (error == cudaErrorInvalidDevice || error == cudaErrorInvalidValue) {
    return InvalidArgument(std::move(message));
  }
  return Internal(std::move(message));
}

}  // namespace coupler::kernels
