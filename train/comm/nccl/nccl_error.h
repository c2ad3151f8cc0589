// Turns NCCL and CUDA runtime return codes into a Status naming the call and the library's own
// message. Internal to the NCCL backend's .cc files (it includes nccl.h and cuda_runtime.h).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <utility>

#include "runtime/status.h"

namespace coupler::comm::internal {

inline Status CudaStatus(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return Status::Ok();
  std::string message = std::string(call) + " failed: " + cudaGetErrorName(rc) + ": " +
                        cudaGetErrorString(rc);
  switch (rc) {
    case cudaErrorMemoryAllocation: return ResourceExhausted(std::move(message));
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable: return Unavailable(std::move(message));
    case cudaErrorInvalidDevice:
    case cudaErrorInvalidValue: return InvalidArgument(std::move(message));
    default: return Internal(std::move(message));
  }
}

// ncclGetLastError carries the detail (which peer, which transport) that the code lacks.
inline Status NcclStatus(ncclResult_t rc, const char* call, ncclComm_t comm = nullptr) {
  if (rc == ncclSuccess) return Status::Ok();
  std::string message = std::string(call) + " failed: " + ncclGetErrorString(rc);
  const char* detail = ncclGetLastError(comm);
  if (detail != nullptr && detail[0] != '\0') message += std::string(" (") + detail + ")";
  switch (rc) {
    case ncclInvalidArgument:
    case ncclInvalidUsage: return InvalidArgument(std::move(message));
    case ncclRemoteError: return Aborted(std::move(message));
    default: return Internal(std::move(message));
  }
}

}  // namespace coupler::comm::internal

#define COUPLER_CUDA_RETURN_IF_ERROR(call) \
  COUPLER_RETURN_IF_ERROR(::coupler::comm::internal::CudaStatus((call), #call))
