// Turns NCCL return codes into a Status naming the call and the library's own message; CUDA
// runtime codes go through kernels/cuda/cuda_check.h, the project's one mapping. Internal to
// the NCCL backend's .cc files (it includes nccl.h and cuda_runtime.h).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>
#include <utility>

#include "kernels/cuda/cuda_check.h"
#include "runtime/status.h"

namespace coupler::comm::internal {

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
