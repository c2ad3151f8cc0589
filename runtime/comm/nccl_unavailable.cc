// Stands in for runtime/comm/nccl/ in builds without NCCL (see runtime/CMakeLists.txt).
#include "runtime/comm/nccl_factory.h"

namespace coupler::comm {

bool NcclAvailable() { return false; }

std::string NcclVersion() { return "none"; }

Result<std::unique_ptr<Communicator>> CreateNcclCommunicator(Communicator& /*bootstrap*/,
                                                             int /*device*/,
                                                             std::chrono::milliseconds /*timeout*/) {
  return Unavailable("NcclCommunicator: built without NCCL (configure with -DCOUPLER_WITH_CUDA=ON "
                     "where the CUDA Toolkit and NCCL are installed)");
}

}  // namespace coupler::comm
