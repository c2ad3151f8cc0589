#include "train/comm/host_staged_communicator.h"

#include "runtime/check.h"

namespace coupler::train {

HostStagedCommunicator::HostStagedCommunicator(comm::Communicator& inner, TrainBackend& backend)
    : Communicator(inner.timeout(), backend.on_device() ? comm::MemorySpace::kDevice
                                                        : comm::MemorySpace::kHost),
      inner_(inner),
      backend_(backend) {
  COUPLER_CHECK_OK(comm::CheckMemorySpace(inner, comm::MemorySpace::kHost,
                                          "the communicator behind host staging"));
}

Status HostStagedCommunicator::AllReduce(const void* send, void* recv, size_t count,
                                         ElementType type, comm::ReduceOp op) {
  COUPLER_RETURN_IF_ERROR(CheckAllReduceArgs(send, recv, count));
  const size_t bytes = count * ElementSize(type);
  host_.resize(bytes);
  COUPLER_RETURN_IF_ERROR(backend_.CopyToHost(host_.data(), send, bytes));
  COUPLER_RETURN_IF_ERROR(inner_.AllReduce(host_.data(), host_.data(), count, type, op));
  return backend_.CopyFromHost(recv, host_.data(), bytes);
}

Status HostStagedCommunicator::Broadcast(void* buf, size_t count, ElementType type, int root) {
  COUPLER_RETURN_IF_ERROR(CheckBroadcastArgs(buf, count, root));
  const size_t bytes = count * ElementSize(type);
  host_.resize(bytes);
  if (rank() == root) COUPLER_RETURN_IF_ERROR(backend_.CopyToHost(host_.data(), buf, bytes));
  COUPLER_RETURN_IF_ERROR(inner_.Broadcast(host_.data(), count, type, root));
  return backend_.CopyFromHost(buf, host_.data(), bytes);
}

}  // namespace coupler::train
