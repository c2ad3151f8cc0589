// Stands in for train/comm/nccl/ in builds without NCCL (see train/CMakeLists.txt).
#include "train/comm/nccl_factory.h"

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
