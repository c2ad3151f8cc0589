// train/comm/nccl_factory.h for builds with NCCL (train/comm/nccl_unavailable.cc otherwise).
#include "train/comm/nccl_factory.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "train/comm/nccl/nccl_communicator.h"

namespace coupler::comm {

bool NcclAvailable() {
  int count = 0;
  // cudaGetDeviceCount fails (cudaErrorNoDevice, cudaErrorInsufficientDriver) where no GPU is.
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::string NcclVersion() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // Since NCCL 2.9 the code is major*10000 + minor*100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code % 10000 / 100) + "." +
         std::to_string(code % 100);
}

Result<std::unique_ptr<Communicator>> CreateNcclCommunicator(Communicator& bootstrap, int device,
                                                             std::chrono::milliseconds timeout) {
  COUPLER_ASSIGN_OR_RETURN(auto comm, NcclCommunicator::Create(bootstrap, device, timeout));
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace coupler::comm
