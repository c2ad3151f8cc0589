#include "train/gradient_backends.h"

#include <utility>

#include "runtime/logging.h"
#include "train/comm/host_staged_communicator.h"
#include "train/comm/nccl_factory.h"

namespace coupler::train {

std::span<const GradientBackend> GradientBackends() {
  static const GradientBackend kBackends[] = {
      // Gradients stay in device memory and NCCL reduces them there. MPI keeps the small
      // host-side collectives (evaluation, resume), which NCCL cannot take.
      {"nccl", "the NCCL communicator",
       [](const GradientRank& r) { return r.gpu != nullptr && r.nccl_available; },
       [](const GradientRank& r) {
         return comm::CreateNcclCommunicator(r.host, r.gpu_device, r.timeout);
       }},
      {"mpi", "the host-staged communicator",
       [](const GradientRank& r) { return r.gpu != nullptr; },
       [](const GradientRank& r) -> Result<std::unique_ptr<comm::Communicator>> {
         if (r.host.rank() == 0) {
           Logger("train")->warn("this build has no NCCL: gradients go through host memory over "
                                 "MPI (two copies per all-reduce)");
         }
         return std::unique_ptr<comm::Communicator>(
             std::make_unique<HostStagedCommunicator>(r.host, *r.gpu));
       }},
      {"mpi", "the MPI communicator", [](const GradientRank&) { return true; },
       [](const GradientRank&) -> Result<std::unique_ptr<comm::Communicator>> {
         return std::unique_ptr<comm::Communicator>();
       }},
  };
  return kBackends;
}

const GradientBackend* FirstUsableGradientBackend(std::span<const GradientBackend> backends,
                                                  const GradientRank& rank) {
  for (const GradientBackend& backend : backends) {
    if (backend.usable(rank)) return &backend;
  }
  return nullptr;
}

Result<GradientCommunicator> CreateGradientCommunicator(const GradientBackend& backend,
                                                        const GradientRank& rank) {
  COUPLER_ASSIGN_OR_RETURN(std::unique_ptr<comm::Communicator> created, backend.create(rank));
  GradientCommunicator chosen;
  chosen.owned = std::move(created);
  chosen.communicator = chosen.owned != nullptr ? chosen.owned.get() : &rank.host;
  return chosen;
}

}  // namespace coupler::train
